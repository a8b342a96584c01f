//! RFTL: primary (fixed offsets), replacement and buffer block per logical block, and its
//! distributed partial GC driven by the block's own writes (see the module docs of
//! `rtblock`).

use super::{pst, rec, Prog, RJob, Role, RtBlockFtl, NONE, TOMB_BIT};
use crate::FtlError;
use alloc::vec;
use controller::DataClass;
use nand::{ErrorModel, Lpn, Nanos, Storage};

impl<S: Storage, M: ErrorModel> RtBlockFtl<S, M> {
    /// Where the newest copy of offset `o` of `x` is, from RAM: (flat page, tombstone);
    /// `None` if never written.
    pub(crate) fn rftl_where(&self, x: u32, o: u32) -> Option<(u32, bool)> {
        let e = self.map[x as usize];
        for b in [e.b, e.r] {
            if b == NONE {
                continue;
            }
            if let Some(t) = self.tab.get(&b) {
                let v = t[o as usize];
                if v != 0 {
                    let page = (v & !TOMB_BIT) as u32 - 1;
                    return Some((b * self.ppb + page, v & TOMB_BIT != 0));
                }
            }
        }
        if e.d != NONE {
            let s = self.pstate.get(&e.d).map_or(pst::NONE, |v| v[o as usize]);
            if s != pst::NONE {
                return Some((e.d * self.ppb + o, s == pst::TOMB));
            }
        }
        None
    }

    /// With `rftl_oob_offsets`, the OOB read Table I charges a request to `x` when it has
    /// a replacement or a buffer block: the record of that block's last written page,
    /// where the offset table is kept (the RAM copy stands in for its content).
    fn rftl_oob_read(&mut self, now: Nanos, x: u32) -> Result<(), FtlError> {
        if !self.cfg.rftl_oob_offsets {
            return Ok(());
        }
        let b = if self.rjobs.contains_key(&x) {
            self.map[x as usize].b
        } else {
            self.map[x as usize].r
        };
        if b == NONE || self.blk[b as usize].next == 0 {
            return Ok(());
        }
        let page = self.blk[b as usize].next - 1;
        self.s.sense_in(
            now,
            b,
            page,
            crate::substrate::Sense::Record,
            crate::Cause::Host,
        )?;
        Ok(())
    }

    /// A host read: where from RAM (with `rftl_oob_offsets`, after Table I's OOB read), one
    /// page read; no GC step.
    pub(crate) fn rftl_read(
        &mut self,
        now: Nanos,
        x: u32,
        o: u32,
        want: Lpn,
        data: &mut [u8],
    ) -> Result<(), FtlError> {
        self.rftl_oob_read(now, x)?;
        let hit = match self.rftl_where(x, o) {
            Some((phys, false)) => self.read_data(now, phys, want, data)?,
            _ => false,
        };
        if !hit {
            self.s.counters_mut().unmapped_reads += 1;
            data.fill(0);
        }
        Ok(())
    }

    /// Records an appended page of offset `o` at `page` of block `b`.
    fn note_appended(&mut self, b: u32, o: u32, page: u32, tomb: bool) {
        if let Some(t) = self.tab.get_mut(&b) {
            t[o as usize] = (page + 1) as u16 | if tomb { TOMB_BIT } else { 0 };
        }
    }

    /// A host write (or a trim's tombstone: `data = None`) of offset `o` of `x`, then one
    /// step of `x`'s job if it is being collected.
    pub(crate) fn rftl_write(
        &mut self,
        now: Nanos,
        x: u32,
        o: u32,
        data: Option<(&[u8], DataClass)>,
    ) -> Result<(), FtlError> {
        let lpn = x as u64 * self.ppb as u64 + o as u64;
        let tomb = data.is_none();
        self.rftl_oob_read(now, x)?;
        let mut done = false;
        for _ in 0..8 {
            if self.rjobs.contains_key(&x) {
                let b = self.map[x as usize].b;
                if self.blk[b as usize].next >= self.ppb {
                    // The buffer is full (it went bad): finish the job inside this write.
                    self.s.counters_mut().rt_overruns += 1;
                    self.rftl_finish_now(now, x)?;
                    continue;
                }
                let page = self.blk[b as usize].next;
                if self.program_host(now, b, page, lpn, data, rec::APPEND)? == Prog::Done {
                    self.note_appended(b, o, page, tomb);
                    let c = self.s.counters_mut();
                    c.max_buffer_pages = c.max_buffer_pages.max(page as u64 + 1);
                    done = true;
                    break;
                }
                continue;
            }
            if self.map[x as usize].d == NONE {
                let p = self.rftl_take(now, Role::Data, x)?;
                self.pstate.insert(p, vec![pst::NONE; self.ppb as usize]);
                self.map[x as usize].d = p;
            }
            let e = self.map[x as usize];
            let appended = e.r != NONE && self.tab.get(&e.r).is_some_and(|t| t[o as usize] != 0);
            if !appended && o >= self.blk[e.d as usize].next {
                if self.program_host(now, e.d, o, lpn, data, 0)? == Prog::Done {
                    if let Some(v) = self.pstate.get_mut(&e.d) {
                        v[o as usize] = if tomb { pst::TOMB } else { pst::DATA };
                    }
                    done = true;
                    break;
                }
                // Skipped (the page was torn) or the block went bad: the replacement.
                continue;
            }
            if e.r == NONE {
                let r = self.rftl_take(now, Role::Append, x)?;
                self.tab.insert(r, vec![0; self.ppb as usize]);
                self.map[x as usize].r = r;
                continue;
            }
            if self.blk[e.r as usize].next < self.ppb {
                let page = self.blk[e.r as usize].next;
                if self.program_host(now, e.r, page, lpn, data, rec::APPEND)? == Prog::Done {
                    self.note_appended(e.r, o, page, tomb);
                    done = true;
                    break;
                }
                continue;
            }
            // isFull(LBN): partial GC of `x` starts; this write goes to its buffer.
            self.rftl_start(now, x)?;
        }
        if !done {
            return Err(FtlError::NoSpace);
        }
        if self.rjobs.contains_key(&x) {
            self.rftl_step(now, x)?;
        }
        Ok(())
    }

    /// A free block for `role` of `x`; with the pool empty, another block's job finishes
    /// inside this request (an overrun).
    fn rftl_take(&mut self, now: Nanos, role: Role, x: u32) -> Result<u32, FtlError> {
        for _ in 0..4 {
            if let Some(b) = self.take_free(role, x) {
                return Ok(b);
            }
            let Some(&y) = self.rjobs.keys().find(|&&y| y != x) else {
                break;
            };
            self.s.counters_mut().rt_overruns += 1;
            self.rftl_finish_now(now, y)?;
        }
        Err(FtlError::NoSpace)
    }

    /// Starts collecting `x`: a new primary and a buffer block.
    fn rftl_start(&mut self, now: Nanos, x: u32) -> Result<(), FtlError> {
        let new = self.rftl_take(now, Role::Data, x)?;
        self.pstate.insert(new, vec![pst::NONE; self.ppb as usize]);
        let b = match self.rftl_take(now, Role::Append, x) {
            Ok(b) => b,
            Err(e) => {
                self.pstate.remove(&new);
                self.blk[new as usize] = super::Blk::FREE;
                self.s.release_erased(new);
                self.free
                    .push(core::cmp::Reverse((self.s.erase[new as usize], new)));
                return Err(e);
            }
        };
        self.tab.insert(b, vec![0; self.ppb as usize]);
        self.map[x as usize].b = b;
        self.rjobs.insert(
            x,
            RJob {
                new,
                o: 0,
                erased: false,
                taken: vec![0; self.ppb as usize],
            },
        );
        Ok(())
    }

    /// Runs `x`'s job to its end.
    fn rftl_finish_now(&mut self, now: Nanos, x: u32) -> Result<(), FtlError> {
        for _ in 0..(4 * self.ppb + 8) {
            if !self.rjobs.contains_key(&x) {
                return Ok(());
            }
            self.rftl_step(now, x)?;
        }
        Err(FtlError::NoSpace)
    }

    /// One partial step of `x`'s job: α offsets copied into the new primary at their
    /// offsets (the newest copy: buffer, replacement, primary), or the old primary's
    /// erase, or the replacement's (then the job ends).
    pub(crate) fn rftl_step(&mut self, now: Nanos, x: u32) -> Result<(), FtlError> {
        let Some(mut job) = self.rjobs.remove(&x) else {
            return Ok(());
        };
        self.s.counters_mut().partial_steps += 1;
        let e = self.map[x as usize];
        let base = x as u64 * self.ppb as u64;
        let mut units = 0;
        while job.o < self.ppb && units < self.alpha {
            let o = job.o;
            // The newest copy, from RAM.
            let from_buf = self.tab.get(&e.b).map_or(0, |t| t[o as usize]);
            let src = self.rftl_where(x, o);
            job.o += 1;
            let Some((phys, tomb)) = src else {
                continue;
            };
            units += 1;
            let dst = job.new;
            match self.copy(now, phys, tomb, dst, o, base + o as u64)? {
                Some(Prog::Done) => {
                    if let Some(v) = self.pstate.get_mut(&dst) {
                        v[o as usize] = if tomb { pst::TOMB } else { pst::DATA };
                    }
                    job.taken[o as usize] = from_buf;
                }
                None => job.taken[o as usize] = from_buf,
                Some(Prog::Conflict | Prog::Bad) => {
                    // The target cannot take page `o`: a new target, copies start over.
                    let bad = self.s.state[dst as usize] == crate::substrate::BState::Bad
                        || self.blk[dst as usize].next >= self.ppb;
                    let Some(n) = self.take_free(Role::Data, x) else {
                        self.rjobs.insert(x, job);
                        return Err(FtlError::NoSpace);
                    };
                    self.pstate.remove(&dst);
                    if bad {
                        self.set_bad(dst);
                    } else {
                        self.blk[dst as usize].role = Role::Victim;
                        self.erase_victim(now, dst)?;
                    }
                    self.pstate.insert(n, vec![pst::NONE; self.ppb as usize]);
                    job.new = n;
                    job.o = 0;
                    job.taken.fill(0);
                }
            }
        }
        if units > 0 || job.o < self.ppb {
            self.rjobs.insert(x, job);
            return Ok(());
        }
        // The copy of offset `o` in the new primary (`NONE`: a tombstone, or lost).
        let copy_of = |me: &Self, o: usize| match me.pstate.get(&job.new).map(|v| v[o]) {
            Some(pst::DATA) => job.new * me.ppb + o as u32,
            _ => NONE,
        };
        if !job.erased {
            job.erased = true;
            if e.d != NONE {
                for o in 0..self.ppb as usize {
                    let to = copy_of(self, o);
                    self.follow(base + o as u64, e.d * self.ppb + o as u32, to);
                }
                self.blk[e.d as usize].role = Role::Victim;
                self.erase_victim(now, e.d)?;
            }
            // Every offset is in the new primary now (the tables still answer first for
            // what the replacement and the buffer hold: the same data or newer).
            self.map[x as usize].d = job.new;
            self.rjobs.insert(x, job);
            return Ok(());
        }
        // The replacement's erase ends the job: the new primary and, as the replacement,
        // the buffer less the copies the primary took.
        if e.r != NONE {
            if let Some(t) = self.tab.get(&e.r).cloned() {
                for (o, v) in t.iter().enumerate() {
                    if *v != 0 {
                        let from = e.r * self.ppb + (v & !TOMB_BIT) as u32 - 1;
                        let to = copy_of(self, o);
                        self.follow(base + o as u64, from, to);
                    }
                }
            }
            self.blk[e.r as usize].role = Role::Victim;
            self.erase_victim(now, e.r)?;
        }
        if let Some(mut t) = self.tab.remove(&e.b) {
            for (o, v) in t.iter_mut().enumerate() {
                if *v != 0 && *v == job.taken[o] {
                    let from = e.b * self.ppb + (*v & !TOMB_BIT) as u32 - 1;
                    let to = copy_of(self, o);
                    self.follow(base + o as u64, from, to);
                    *v = 0;
                }
            }
            self.tab.insert(e.b, t);
        }
        self.map[x as usize] = super::Lb {
            d: job.new,
            r: e.b,
            b: NONE,
        };
        self.s.counters_mut().max_victim_valid = self.s.counters_mut().max_victim_valid.max(
            self.pstate
                .get(&job.new)
                .map_or(0, |v| v.iter().filter(|&&s| s != pst::NONE).count() as u64),
        );
        Ok(())
    }
}
