//! The paged map store's side of the kernel's map interface ([`MapStore`]), and its
//! invariants (`verify`).

use super::{set_bit, tp_len, PagedMap, INVALID, NONE};
use crate::page::map::MapStore;
use crate::substrate::Substrate;
use crate::FtlError;
use alloc::format;
use alloc::string::String;
use nand::{ErrorModel, Nanos, Storage};

impl<S: Storage, M: ErrorModel> PagedMap<S, M> {
    /// The store's invariants: each partition's (directory ↔ owners ↔ counts, no current
    /// or pinned unit in a free block), lines ↔ their index, the budget (but counted
    /// overflows), a clean line equal to its TP's flash state, a log's entries marked.
    pub fn verify(&self, sub: &Substrate<S, M>) -> Result<(), String> {
        if self.mount.is_some() {
            return Err("the map store is still in mount mode".into());
        }
        let ntp = self.ntp();
        if self.line_of.len() != ntp {
            return Err(format!(
                "map cache index sized for the wrong volume ({ntp} TPs)"
            ));
        }
        self.tps.verify(sub, ntp)?;
        if let Some(l) = &self.logs {
            l.verify(sub, ntp)?;
        }
        if self.lines.len() > self.cap + self.overflows as usize {
            return Err(format!(
                "{} cached TPs for a budget of {}",
                self.lines.len(),
                self.cap
            ));
        }
        for (i, l) in self.lines.iter().enumerate() {
            if l.tp == NONE {
                continue;
            }
            if self.line_of.get(l.tp as usize) != Some(&(i as u32)) {
                return Err(format!("cached TP {} is not indexed", l.tp));
            }
            let r = self.range(l.tp);
            if !l.dirty && l.entries[..r.len()] != self.flash[r.clone()] {
                return Err(format!(
                    "clean cached TP {} differs from its flash state",
                    l.tp
                ));
            }
            if l.dirty != l.changed.iter().any(|&w| w != 0) {
                return Err(format!(
                    "cached TP {}: dirty disagrees with its changes",
                    l.tp
                ));
            }
            let logged = l
                .logged
                .iter()
                .map(|w| w.count_ones() as usize)
                .sum::<usize>();
            let has_log = self
                .logs
                .as_ref()
                .is_some_and(|g| g.dir[l.tp as usize] != NONE);
            if logged > self.log_cap || (logged > 0 && !has_log) {
                return Err(format!("cached TP {}: {logged} logged entries", l.tp));
            }
        }
        for (tp, &i) in self.line_of.iter().enumerate() {
            if i != NONE && self.lines.get(i as usize).map(|l| l.tp) != Some(tp as u32) {
                return Err(format!("TP {tp} indexed at a line holding another"));
            }
        }
        let occupied = self.lines.iter().enumerate().filter(|(_, l)| l.tp != NONE);
        if occupied.clone().count() != self.lru.len()
            || occupied
                .into_iter()
                .any(|(i, l)| !self.lru.contains(&(l.used, i as u32)))
        {
            return Err("the cache's recency index disagrees with its lines".into());
        }
        Ok(())
    }
}

impl<S: Storage, M: ErrorModel> MapStore<S, M> for PagedMap<S, M> {
    fn name(&self) -> &'static str {
        "paged"
    }

    fn len(&self) -> u64 {
        self.logical
    }

    fn resize(&mut self, logical: u64) {
        if self.mount.is_some() {
            self.set_logical(logical);
            let ntp = self.ntp();
            if let Some(m) = &mut self.mount {
                m.all.resize(logical as usize, INVALID);
                m.base.resize(logical as usize, INVALID);
                m.dirty.resize(ntp, true);
            }
            return;
        }
        // Lines of TPs past the new end are dropped; entries past it become unmapped.
        let old = self.logical;
        self.set_logical(logical);
        for i in 0..self.lines.len() {
            let tp = self.lines[i].tp;
            if tp == NONE {
                continue;
            }
            if tp as usize >= self.ntp() {
                self.lru.remove(&(self.lines[i].used, i as u32));
                self.lines[i].tp = NONE;
                self.lines[i].dirty = false;
                continue;
            }
            let n = tp_len(self.per_tp, logical, tp) as usize;
            let line = &mut self.lines[i];
            for e in n..self.per_tp as usize {
                if line.entries[e] != INVALID {
                    line.entries[e] = INVALID;
                    line.dirty = true;
                    set_bit(&mut line.changed, e);
                }
            }
        }
        if logical < old {
            self.flash.truncate(logical as usize);
        }
    }

    fn get(&mut self, sub: &mut Substrate<S, M>, now: Nanos, lpn: u64) -> Result<u32, FtlError> {
        if let Some(m) = &self.mount {
            return Ok(m.all[lpn as usize]);
        }
        let tp = (lpn / self.per_tp as u64) as u32;
        let i = self.line(sub, now, tp)?;
        Ok(self.lines[i].entries[(lpn % self.per_tp as u64) as usize])
    }

    fn set(
        &mut self,
        sub: &mut Substrate<S, M>,
        now: Nanos,
        lpn: u64,
        phys: u32,
    ) -> Result<(), FtlError> {
        self.replace(sub, now, lpn, phys).map(drop)
    }

    /// A write's look-up and update: one cache access (one hit or miss counted).
    fn replace(
        &mut self,
        sub: &mut Substrate<S, M>,
        now: Nanos,
        lpn: u64,
        phys: u32,
    ) -> Result<u32, FtlError> {
        if let Some(m) = &mut self.mount {
            return Ok(core::mem::replace(&mut m.all[lpn as usize], phys));
        }
        let i = self.line(sub, now, (lpn / self.per_tp as u64) as u32)?;
        Ok(self.put(i, lpn, phys))
    }

    fn peek(&self, lpn: u64) -> Option<u32> {
        if let Some(m) = &self.mount {
            return m.all.get(lpn as usize).copied();
        }
        let tp = (lpn / self.per_tp as u64) as usize;
        let i = *self.line_of.get(tp)?;
        (i != NONE).then(|| self.lines[i as usize].entries[(lpn % self.per_tp as u64) as usize])
    }

    fn audit(&self, lpn: u64) -> Option<u32> {
        if lpn >= self.logical {
            return None;
        }
        self.peek(lpn)
            .or_else(|| self.flash.get(lpn as usize).copied())
    }

    fn entries(&self) -> Option<&[u32]> {
        None
    }
}
