//! The kernels' charged chip operations: programs (host data, tombstones, GC copies),
//! the erase of a victim, host reads, the free pool and the shadow map they keep.

use super::*;

impl<S: Storage, M: ErrorModel> RtBlockFtl<S, M> {
    /// Programs page `page` of block `b` with a record naming `field` (logical page and
    /// flags) — every program of the kernel. Keeps the shadow map.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn program(
        &mut self,
        now: Nanos,
        b: u32,
        page: u32,
        payload: Payload<'_>,
        field: u64,
        kind: PageKind,
        cause: Cause,
        after: Option<u32>,
    ) -> Result<Prog, FtlError> {
        let r = self
            .s
            .program_kept(now, b, page, payload, field, kind, cause, after)?;
        match r {
            Prog::Done => {
                // A copy holds the same version: the shadow follows it when the read path
                // does (`follow`), not before.
                if field & rec::COPY == 0 {
                    let lpn = (field & rec::LPN) as usize;
                    if let Some(e) = self.shadow.get_mut(lpn) {
                        *e = if field & rec::TOMB != 0 {
                            NONE
                        } else {
                            b * self.ppb + page
                        };
                    }
                }
                self.blk[b as usize].next = page + 1;
            }
            // Gone bad: no more programs here; its data stay readable until its erase
            // (which fails and retires it).
            Prog::Bad => self.blk[b as usize].next = self.ppb,
            // Refused (a torn page after a crash): skipped.
            Prog::Conflict => {
                self.torn.insert(b * self.ppb + page);
                self.blk[b as usize].next = page + 1;
            }
        }
        Ok(r)
    }

    /// Programs host data (or a tombstone: `data = None`) for `lpn` at `page` of `b`.
    pub(crate) fn program_host(
        &mut self,
        now: Nanos,
        b: u32,
        page: u32,
        lpn: u64,
        data: Option<(&[u8], DataClass)>,
        flags: u64,
    ) -> Result<Prog, FtlError> {
        let zeros = core::mem::take(&mut self.zeros);
        let (payload, kind, field) = match data {
            Some((d, c)) => (Payload::Data(d), PageKind::User(c), lpn | flags),
            None => (
                Payload::Data(&zeros),
                PageKind::User(DataClass::NORMAL),
                lpn | flags | rec::TOMB,
            ),
        };
        let r = self.program(now, b, page, payload, field, kind, Cause::Host, None);
        self.zeros = zeros;
        r
    }

    /// Copies `lpn`'s newest copy at flat page `src` (a tombstone when `tomb`) to page
    /// `page` of block `dst` (a data block or primary: no append flag). `Ok(None)`: the source did not decode (the page is lost);
    /// otherwise how the program ended.
    pub(crate) fn copy(
        &mut self,
        now: Nanos,
        src: u32,
        tomb: bool,
        dst: u32,
        page: u32,
        lpn: u64,
    ) -> Result<Option<Prog>, FtlError> {
        if tomb {
            let zeros = core::mem::take(&mut self.zeros);
            let r = self.program(
                now,
                dst,
                page,
                Payload::Data(&zeros),
                lpn | rec::COPY | rec::TOMB,
                PageKind::GcCopy(DataClass::NORMAL),
                Cause::Gc,
                None,
            );
            self.zeros = zeros;
            return r.map(Some);
        }
        let (sb, sp) = (src / self.ppb, src % self.ppb);
        let (found, op) = self.s.sense_in(now, sb, sp, Sense::Relocate, Cause::Gc)?;
        let class = match found {
            Sensed::Data(controller::ReadInfo { record: r, .. })
                if r.lpn & rec::LPN == lpn && r.lpn & rec::TOMB == 0 =>
            {
                r.kind.data_class().unwrap_or(DataClass::NORMAL)
            }
            _ => {
                self.s.counters_mut().lost_pages += 1;
                if let Some(e) = self.shadow.get_mut(lpn as usize) {
                    if *e == src {
                        *e = NONE;
                    }
                }
                return Ok(None);
            }
        };
        let r = self.program(
            now,
            dst,
            page,
            Payload::Relocated,
            lpn | rec::COPY,
            PageKind::GcCopy(class),
            Cause::Gc,
            Some(op),
        )?;
        if r == Prog::Done {
            self.s.counters_mut().valid_copies += 1;
        }
        Ok(Some(r))
    }

    /// The read path of `lpn` moves from `from` to its copy `to` (`NONE`: the copy was a
    /// tombstone or lost): the shadow follows if it pointed at `from`.
    pub(crate) fn follow(&mut self, lpn: u64, from: u32, to: u32) {
        if let Some(e) = self.shadow.get_mut(lpn as usize) {
            if *e == from {
                *e = to;
            }
        }
    }

    /// Takes the least-worn free block (erased) for `role` of logical block `lbn`.
    pub(crate) fn take_free(&mut self, role: Role, lbn: u32) -> Option<u32> {
        let Reverse((_, b)) = self.free.pop()?;
        self.blk[b as usize] = Blk { role, lbn, next: 0 };
        self.s.set_state(b, BState::Open);
        Some(b)
    }

    /// Erases victim `b` (a GC step) and returns it to the pool (or retires it).
    pub(crate) fn erase_victim(&mut self, now: Nanos, b: u32) -> Result<(), FtlError> {
        let ppb = self.ppb;
        self.torn.retain(|&p| p / ppb != b);
        self.pstate.remove(&b);
        self.tab.remove(&b);
        if self.s.erase_block(now, b, Cause::Gc)? {
            self.blk[b as usize] = Blk::FREE;
            self.s.release_erased(b);
            self.free.push(Reverse((self.s.erase[b as usize], b)));
        } else {
            self.blk[b as usize] = Blk {
                role: Role::Bad,
                ..Blk::FREE
            };
        }
        self.s.counters_mut().gc_victims += 1;
        Ok(())
    }

    /// Marks block `b` bad (kernel and substrate).
    pub(crate) fn set_bad(&mut self, b: u32) {
        self.blk[b as usize] = Blk {
            role: Role::Bad,
            ..Blk::FREE
        };
        self.s.set_state(b, BState::Bad);
    }

    /// Reads flat page `phys` for the host: `true` if it holds data of `lpn` (zeros are
    /// left in `data` otherwise).
    pub(crate) fn read_data(
        &mut self,
        now: Nanos,
        phys: u32,
        lpn: Lpn,
        data: &mut [u8],
    ) -> Result<bool, FtlError> {
        let (b, page) = (phys / self.ppb, phys % self.ppb);
        match self
            .s
            .sense_in(now, b, page, Sense::Page(data), Cause::Host)?
            .0
        {
            Sensed::Data(controller::ReadInfo { record: r, .. }) => {
                Ok(r.lpn & rec::TOMB == 0 && r.lpn & rec::LPN == lpn.get())
            }
            Sensed::Erased => Ok(false),
            Sensed::Failed => Err(FtlError::Unreadable(lpn)),
        }
    }

    /// The logical block and offset of `lpn`, or `OutOfRange`.
    pub(super) fn locate(&self, lpn: Lpn) -> Result<(u32, u32), FtlError> {
        let count = self.logical_pages();
        if lpn.get() >= count {
            return Err(FtlError::OutOfRange {
                lpn: lpn.get(),
                count,
            });
        }
        let ppb = self.ppb as u64;
        Ok(((lpn.get() / ppb) as u32, (lpn.get() % ppb) as u32))
    }
}
