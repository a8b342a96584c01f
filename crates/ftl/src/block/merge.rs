//! Merges (a logical block's valid offsets into a new primary with its commit page) and
//! static wear levelling, and what happens to their victims.

use super::io::Src;
use super::{rec, Blk, BlockFtl, Role, Use, NONE};
use crate::substrate::{BState, Payload, Prog};
use crate::substrate::{Sense, Sensed};
use crate::{Cause, FtlError};
use alloc::vec::Vec;
use controller::{DataClass, PageKind};
use nand::{ErrorModel, Nanos, Storage};

impl<S: Storage, M: ErrorModel> BlockFtl<S, M> {
    // ----- merge and wear levelling ----------------------------------------------------

    /// Merges logical block `x`: its valid offsets (and `host`, the page being written:
    /// `Some((o, None))` is a trim of `o`) into a new primary; the old blocks go.
    pub(crate) fn merge(
        &mut self,
        now: Nanos,
        x: u32,
        host: Option<(u32, Option<Src<'_>>)>,
    ) -> Result<(), FtlError> {
        let e = self.map[x as usize];
        for b in [e.p, e.r] {
            if b != NONE {
                self.resolve(now, b)?;
            }
        }
        let ppb = self.ppb();
        let mut entries: Vec<(u32, Src<'_>)> = Vec::new();
        for o in 0..ppb {
            match host {
                Some((ho, s)) if ho == o => {
                    if let Some(s) = s {
                        entries.push((o, s));
                    }
                }
                _ => {
                    if let Some(p) = self.where_is(x, o) {
                        entries.push((o, Src::Page(p)));
                    }
                }
            }
        }
        self.s.counters_mut().gc_victims += 1;
        if entries.is_empty() {
            self.map[x as usize] = super::Entry { p: NONE, r: NONE };
            for v in [e.p, e.r] {
                if v != NONE {
                    self.drop_victim(now, v, true)?;
                }
            }
            return Ok(());
        }
        let n = self.copy_into_new(now, x, &entries, Use::Merge)?;
        self.map[x as usize] = super::Entry { p: n, r: NONE };
        for v in [e.p, e.r] {
            if v != NONE {
                let young = self.blk[v as usize].young;
                self.drop_victim(now, v, young)?;
            }
        }
        Ok(())
    }

    /// Copies `entries` into a block allocated for `use_` (retrying on a block that fails),
    /// which becomes `x`'s primary-to-be; returns it.
    pub(crate) fn copy_into_new(
        &mut self,
        now: Nanos,
        x: u32,
        entries: &[(u32, Src<'_>)],
        use_: Use,
    ) -> Result<u32, FtlError> {
        for _ in 0..4 {
            let Some(n) = self.alloc(now, use_)? else {
                return Err(FtlError::NoSpace);
            };
            self.blk[n as usize].role = Role::Primary;
            self.blk[n as usize].lbn = x;
            match self.copy_into(now, n, x, entries)? {
                Prog::Done => return Ok(n),
                Prog::Bad => self.set_bad(n),
                Prog::Conflict => {
                    self.blk[n as usize] = Blk {
                        role: Role::Dead,
                        young: true,
                        ..Blk::FREE
                    };
                    self.freed_since_cp += 1;
                }
            }
        }
        Err(FtlError::NoSpace)
    }

    /// On a multi-level chip, pads block `n` so that page `to` is the next one a copy
    /// programs (the ascending rule without gaps): `Done` when it is, `Bad` if the block
    /// failed, `Conflict` if it is already past `to`. Nothing to do on SLC.
    fn pad_until(&mut self, now: Nanos, n: u32, to: u32) -> Result<Prog, FtlError> {
        if !self.multi() {
            return Ok(Prog::Done);
        }
        Ok(match self.pad_to(now, n, to)? {
            Prog::Done if self.blk[n as usize].next as u32 == to => Prog::Done,
            Prog::Bad => Prog::Bad,
            _ => Prog::Conflict,
        })
    }

    /// Programs `entries` at their offsets of the fresh block `n`, then its last page with
    /// the commit flag (a tombstone if no entry is there). `Conflict` or `Bad`: `n` is
    /// unusable.
    pub(crate) fn copy_into(
        &mut self,
        now: Nanos,
        n: u32,
        x: u32,
        entries: &[(u32, Src<'_>)],
    ) -> Result<Prog, FtlError> {
        let ppb = self.ppb();
        let last = ppb - 1;
        for &(o, src) in entries {
            let r = self.pad_until(now, n, o)?;
            if r != Prog::Done {
                return Ok(r);
            }
            let flags = rec::MERGE | if o == last { rec::LAST } else { 0 };
            let lpn = (x * ppb + o) as u64 | flags;
            let r = match src {
                Src::Host(d, c) => self.program(
                    now,
                    n,
                    o,
                    Payload::Data(d),
                    lpn,
                    PageKind::User(c),
                    Cause::Host,
                    None,
                )?,
                Src::Page(phys) => {
                    let (b, page) = self.s.split(phys);
                    match self.s.sense_in(now, b, page, Sense::Relocate, Cause::Gc)? {
                        (Sensed::Data(info), op) => {
                            let r = info.record;
                            match r.kind.data_class() {
                                Some(c) if r.lpn & rec::TOMB == 0 => {
                                    self.s.counters_mut().valid_copies += 1;
                                    self.program(
                                        now,
                                        n,
                                        o,
                                        Payload::Relocated,
                                        lpn,
                                        PageKind::GcCopy(c),
                                        Cause::Gc,
                                        Some(op),
                                    )?
                                }
                                _ => Prog::Done,
                            }
                        }
                        (Sensed::Erased, _) => Prog::Done,
                        (Sensed::Failed, _) => {
                            self.s.counters_mut().lost_pages += 1;
                            Prog::Done
                        }
                    }
                }
            };
            if r != Prog::Done {
                return Ok(r);
            }
        }
        // The commit page.
        if (self.blk[n as usize].next as u32) <= last {
            let r = self.pad_until(now, n, last)?;
            if r != Prog::Done {
                return Ok(r);
            }
            let lpn = (x * ppb + last) as u64 | rec::MERGE | rec::LAST | rec::TOMB;
            let zeros = core::mem::take(&mut self.zeros);
            let r = self.program(
                now,
                n,
                last,
                Payload::Data(&zeros),
                lpn,
                PageKind::User(DataClass::NORMAL),
                Cause::Gc,
                None,
            );
            self.zeros = zeros;
            return r;
        }
        Ok(Prog::Done)
    }

    /// A merge or wear-levelling victim leaves: erased now (`defer` false: recovery
    /// infers the erase), or dead until the next checkpoint; a bad one stays bad.
    pub(crate) fn drop_victim(&mut self, now: Nanos, v: u32, defer: bool) -> Result<(), FtlError> {
        self.roff.remove(&v);
        self.freed_since_cp += 1;
        if self.s.state[v as usize] == BState::Bad {
            self.set_bad(v);
            return Ok(());
        }
        if defer {
            self.blk[v as usize] = Blk {
                role: Role::Dead,
                young: true,
                ..Blk::FREE
            };
            return Ok(());
        }
        if self.s.erase_block(now, v, Cause::Gc)? {
            self.blk[v as usize] = Blk::FREE;
            self.clear_torn(v);
            self.erases_since_wl += 1;
        } else {
            self.set_bad(v);
        }
        Ok(())
    }

    /// Forgets the torn pages of block `b` (erased).
    pub(crate) fn clear_torn(&mut self, b: u32) {
        let ppb = self.ppb();
        let gone: Vec<u32> = self.torn.range(b * ppb..(b + 1) * ppb).copied().collect();
        for p in gone {
            self.torn.remove(&p);
        }
    }

    /// Static wear levelling, every `check_every` erases (see the module docs).
    pub(crate) fn maybe_wear_level(&mut self, now: Nanos) -> Result<(), FtlError> {
        let Some(wl) = self.cfg.wear_leveling else {
            return Ok(());
        };
        if self.erases_since_wl < wl.check_every {
            return Ok(());
        }
        self.erases_since_wl = 0;
        let mut lo = u32::MAX;
        let mut hi = 0;
        let mut victim: Option<(u32, u32)> = None;
        for (b, k) in self.blk.iter().enumerate() {
            if matches!(k.role, Role::Bad | Role::Region) {
                continue;
            }
            let ec = self.s.erase[b];
            lo = lo.min(ec);
            hi = hi.max(ec);
            if k.role == Role::Primary
                && !k.young
                && !k.unresolved
                && self.map[k.lbn as usize].r == NONE
                && victim.is_none_or(|(_, e)| ec < e)
            {
                victim = Some((b as u32, ec));
            }
        }
        let Some((p, ec)) = victim else {
            return Ok(());
        };
        if hi - lo <= wl.spread || ec > lo + wl.spread / 2 || self.lists.hi >= self.lists.h.len() {
            return Ok(());
        }
        let x = self.blk[p as usize].lbn;
        let entries: Vec<(u32, Src<'_>)> = (0..self.ppb())
            .filter_map(|o| self.where_is(x, o).map(|ph| (o, Src::Page(ph))))
            .collect();
        let n = match self.copy_into_new(now, x, &entries, Use::Wl) {
            Ok(n) => n,
            // The hot list ran out (a block of it failed): wear levelling waits for the
            // next checkpoint's list; the victim keeps its data.
            Err(FtlError::NoSpace) => return Ok(()),
            Err(e) => return Err(e),
        };
        self.map[x as usize].p = n;
        self.drop_victim(now, p, false)?;
        self.s.counters_mut().wl_migrations += 1;
        Ok(())
    }
}
