//! GFTL: data blocks filled in write order, the central write buffer, the GC queue and its
//! partial steps after every request (see the module docs of `rtblock`).

use super::{rec, BufEntry, GJob, Prog, Role, RtBlockFtl, NONE, TOMB_BIT};
use crate::substrate::{Sense, Sensed};

use crate::{Cause, FtlError};
use alloc::vec;
use controller::DataClass;
use nand::{ErrorModel, Lpn, Nanos, Storage};

/// Bound of the loops that finish work inside one request when a bound cannot be kept
/// (overruns): far more steps than any queue of this volume needs.
const OVERRUN_STEPS: u32 = 1 << 22;

impl<S: Storage, M: ErrorModel> RtBlockFtl<S, M> {
    /// A host write (or, with `data = None`, a trim's tombstone) of offset `o` of logical
    /// block `x`, then one partial step.
    pub(crate) fn gftl_write(
        &mut self,
        now: Nanos,
        x: u32,
        o: u32,
        data: Option<(&[u8], DataClass)>,
    ) -> Result<(), FtlError> {
        let lpn = x as u64 * self.ppb as u64 + o as u64;
        let mut done = false;
        for _ in 0..4 {
            if self.map[x as usize].d == NONE {
                let Some(d) = self.gftl_take(now, Role::Data, x)? else {
                    return Err(FtlError::NoSpace);
                };
                self.map[x as usize].d = d;
            }
            let d = self.map[x as usize].d;
            if self.queued[x as usize] || self.blk[d as usize].next >= self.ppb {
                break;
            }
            let page = self.blk[d as usize].next;
            match self.program_host(now, d, page, lpn, data, 0)? {
                Prog::Done => {
                    self.buf_remove(lpn);
                    if self.blk[d as usize].next == self.ppb {
                        self.enqueue(x);
                    }
                    done = true;
                    break;
                }
                Prog::Conflict => {}
                Prog::Bad => self.enqueue(x),
            }
        }
        if !done {
            if self.blk[self.map[x as usize].d as usize].next >= self.ppb {
                self.enqueue(x);
            }
            self.buffer_append(now, lpn, data)?;
        }
        self.gftl_step(now)?;
        Ok(())
    }

    /// A host read of offset `o` of logical block `x`: the buffer's map, else the data
    /// block's records from its write pointer down; then one partial step.
    pub(crate) fn gftl_read(
        &mut self,
        now: Nanos,
        x: u32,
        want: Lpn,
        data: &mut [u8],
    ) -> Result<(), FtlError> {
        let lpn = want.get();
        let found = if let Some(e) = self.buf.get(&lpn).copied() {
            (!e.tomb).then_some(e.phys)
        } else {
            self.scan_data_block(now, x, want)?
        };
        let hit = match found {
            Some(phys) => self.read_data(now, phys, want, data)?,
            None => false,
        };
        if !hit {
            self.s.counters_mut().unmapped_reads += 1;
            data.fill(0);
        }
        self.gftl_step(now)?;
        Ok(())
    }

    /// The newest page of `lpn` in `x`'s data block by its records, read from the write
    /// pointer down (charged record reads); `None` if none or a tombstone.
    fn scan_data_block(&mut self, now: Nanos, x: u32, want: Lpn) -> Result<Option<u32>, FtlError> {
        let lpn = want.get();
        let d = self.map[x as usize].d;
        if d == NONE {
            return Ok(None);
        }
        for page in (0..self.blk[d as usize].next).rev() {
            let phys = d * self.ppb + page;
            if self.torn.contains(&phys) {
                continue;
            }
            match self.s.sense_in(now, d, page, Sense::Record, Cause::Host)?.0 {
                Sensed::Data(controller::ReadInfo { record: r, .. }) if r.lpn & rec::LPN == lpn => {
                    return Ok((r.lpn & rec::TOMB == 0).then_some(phys));
                }
                Sensed::Data(_) | Sensed::Erased => {}
                // A record that does not decode could be this page's newest copy: an
                // older one must not be returned in its place.
                Sensed::Failed => return Err(FtlError::Unreadable(want)),
            }
        }
        Ok(None)
    }

    /// The page the read path would read for `lpn` (RAM only: the buffer's map, else the
    /// shadow's page if it is in the data block — whose records a read scans).
    pub(crate) fn gftl_lookup(&self, x: u32, _o: u32, lpn: u64) -> Option<u32> {
        if let Some(e) = self.buf.get(&lpn) {
            return (!e.tomb).then_some(e.phys);
        }
        let d = self.map[x as usize].d;
        let p = self.shadow[lpn as usize];
        (d != NONE && p != NONE && p / self.ppb == d).then_some(p)
    }

    /// Puts `x` on the GC queue (once).
    fn enqueue(&mut self, x: u32) {
        if !self.queued[x as usize] {
            self.queued[x as usize] = true;
            self.queue.push_back(x);
        }
    }

    /// Drops `lpn`'s buffer entry (superseded or copied); a buffer block left with no
    /// live entry goes to the erase queue unless it is the one written.
    fn buf_remove(&mut self, lpn: u64) {
        let Some(e) = self.buf.remove(&lpn) else {
            return;
        };
        let b = e.phys / self.ppb;
        self.buf_live[b as usize] -= 1;
        if self.buf_live[b as usize] == 0 {
            self.retire_buffer_block(b, false);
        }
    }

    /// Sends buffer block `b` to the erase queue if it holds no live entry and is not the
    /// block being written (`force`: even if it is).
    fn retire_buffer_block(&mut self, b: u32, force: bool) {
        if self.buf_live[b as usize] != 0 {
            return;
        }
        let last = self.buf_blocks.back() == Some(&b);
        if last && !force && self.blk[b as usize].next < self.ppb {
            return;
        }
        if let Some(i) = self.buf_blocks.iter().position(|&v| v == b) {
            self.buf_blocks.remove(i);
            self.buf_pages.remove(&b);
            self.blk[b as usize].role = Role::Victim;
            self.erase_q.push_back(b);
        }
    }

    /// Appends `lpn` (data or a tombstone) to the write buffer.
    fn buffer_append(
        &mut self,
        now: Nanos,
        lpn: u64,
        data: Option<(&[u8], DataClass)>,
    ) -> Result<(), FtlError> {
        for _ in 0..8 {
            let b = match self.buf_blocks.back() {
                Some(&b) if self.blk[b as usize].next < self.ppb => b,
                _ => self.open_buffer_block(now)?,
            };
            let page = self.blk[b as usize].next;
            match self.program_host(now, b, page, lpn, data, rec::APPEND)? {
                Prog::Done => {
                    // The new entry first: dropping the old one may retire its block, which
                    // can be this one.
                    let phys = b * self.ppb + page;
                    self.buf_live[b as usize] += 1;
                    if let Some(v) = self.buf_pages.get_mut(&b) {
                        v[page as usize] = lpn;
                    }
                    let entry = BufEntry {
                        phys,
                        tomb: data.is_none(),
                    };
                    if let Some(old) = self.buf.insert(lpn, entry) {
                        self.buf.insert(lpn, old);
                        self.buf_remove(lpn);
                        self.buf.insert(lpn, entry);
                    }
                    return Ok(());
                }
                Prog::Conflict | Prog::Bad => {}
            }
        }
        Err(FtlError::NoSpace)
    }

    /// Opens a new buffer block. Near the buffer's end the owners of the oldest block's
    /// live entries are queued for GC; at its end jobs run inside this write (an overrun).
    fn open_buffer_block(&mut self, now: Nanos) -> Result<u32, FtlError> {
        if let Some(&last) = self.buf_blocks.back() {
            self.retire_buffer_block(last, true);
        }
        let in_use = |me: &Self| (me.buf_blocks.len() + me.erase_q.len()) as u32;
        if in_use(self) >= self.buf_limit {
            self.s.counters_mut().rt_overruns += 1;
            let mut n = 0;
            while in_use(self) >= self.buf_limit {
                self.press_oldest_buffer_block();
                if !self.gftl_step(now)? || n > OVERRUN_STEPS {
                    return Err(FtlError::NoSpace);
                }
                n += 1;
            }
        }
        let Some(b) = self.gftl_take(now, Role::Buffer, NONE)? else {
            return Err(FtlError::NoSpace);
        };
        self.buf_pages.insert(b, vec![u64::MAX; self.ppb as usize]);
        self.buf_blocks.push_back(b);
        let used = in_use(self) as u64 * self.ppb as u64;
        let c = self.s.counters_mut();
        c.max_buffer_pages = c.max_buffer_pages.max(used);
        if in_use(self) + 1 >= self.buf_limit {
            self.press_oldest_buffer_block();
        }
        Ok(b)
    }

    /// Queues for GC the owners of the oldest buffer block's live entries.
    fn press_oldest_buffer_block(&mut self) {
        let Some(&b) = self.buf_blocks.front() else {
            return;
        };
        let Some(pages) = self.buf_pages.get(&b) else {
            return;
        };
        let owners: alloc::vec::Vec<u32> = pages
            .iter()
            .enumerate()
            .filter(|&(page, &lpn)| {
                lpn != u64::MAX
                    && self
                        .buf
                        .get(&lpn)
                        .is_some_and(|e| e.phys == b * self.ppb + page as u32)
            })
            .map(|(_, &lpn)| (lpn / self.ppb as u64) as u32)
            .collect();
        for x in owners {
            self.enqueue(x);
        }
    }

    /// A free block for `role` of `lbn`; when the pool is empty, jobs finish inside this
    /// request (an overrun) until one is freed.
    fn gftl_take(&mut self, now: Nanos, role: Role, lbn: u32) -> Result<Option<u32>, FtlError> {
        if self.free.is_empty() {
            self.s.counters_mut().rt_overruns += 1;
            let mut n = 0;
            while self.free.is_empty() {
                if !self.gftl_step(now)? || n > OVERRUN_STEPS {
                    return Ok(None);
                }
                n += 1;
            }
        }
        Ok(self.take_free(role, lbn))
    }

    /// One partial step: a buffer block's erase; or of the running job: the scan of its
    /// old block's records (π record reads), or α copies (each offset's newest copy: the
    /// buffer's, else the old block's), or the old block's erase. Starts the queue's next
    /// job when none runs. `false`: nothing to do.
    pub(crate) fn gftl_step(&mut self, now: Nanos) -> Result<bool, FtlError> {
        if let Some(b) = self.erase_q.pop_front() {
            self.erase_victim(now, b)?;
            self.s.counters_mut().partial_steps += 1;
            return Ok(true);
        }
        if self.job.is_none() && !self.start_job() {
            return Ok(false);
        }
        self.s.counters_mut().partial_steps += 1;
        let mut job = self.job.take().expect("a job runs");
        if !job.scanned {
            self.scan_victim(now, &mut job)?;
            self.job = Some(job);
            return Ok(true);
        }
        let base = job.x as u64 * self.ppb as u64;
        let mut units = 0;
        while job.o < self.ppb && units < self.alpha {
            let o = job.o;
            let lpn = base + o as u64;
            let (src, tomb, from_buf) = match self.buf.get(&lpn) {
                Some(e) => (e.phys, e.tomb, true),
                None => match job.dtab[o as usize] {
                    0 => {
                        job.o += 1;
                        continue;
                    }
                    v => (
                        job.old * self.ppb + (v & !TOMB_BIT) as u32 - 1,
                        v & TOMB_BIT != 0,
                        false,
                    ),
                },
            };
            units += 1;
            if !self.target_has_room(&mut job) {
                break;
            }
            let dst = job.new;
            let next = self.blk[dst as usize].next;
            match self.copy(now, src, tomb, dst, next, lpn)? {
                Some(Prog::Done) => {
                    let to = if tomb { NONE } else { dst * self.ppb + next };
                    job.placed.push((lpn, src, to));
                    if from_buf {
                        job.consumed.push((lpn, src));
                    }
                    job.o += 1;
                }
                None => {
                    if from_buf {
                        job.consumed.push((lpn, src));
                    }
                    job.o += 1;
                }
                // Copied again at the target's next page.
                Some(Prog::Conflict) => {}
                Some(Prog::Bad) => {
                    self.set_bad(dst);
                    if !self.restart_job(&mut job) {
                        break;
                    }
                }
            }
        }
        if units == 0 && job.o >= self.ppb {
            self.finish_job(now, job)?;
            return Ok(true);
        }
        self.job = Some(job);
        Ok(true)
    }

    /// The job's first step: the old block's records from its write pointer down, so the
    /// newest page of each offset is known (the job's own table, π entries).
    fn scan_victim(&mut self, now: Nanos, job: &mut GJob) -> Result<(), FtlError> {
        let base = job.x as u64 * self.ppb as u64;
        let old = job.old;
        for page in (0..self.blk[old as usize].next).rev() {
            if self.torn.contains(&(old * self.ppb + page)) {
                continue;
            }
            if let Sensed::Data(controller::ReadInfo { record: r, .. }) =
                self.s.sense_in(now, old, page, Sense::Record, Cause::Gc)?.0
            {
                let lpn = r.lpn & rec::LPN;
                if lpn < base || lpn >= base + self.ppb as u64 {
                    continue;
                }
                let o = (lpn - base) as usize;
                if job.dtab[o] == 0 {
                    job.dtab[o] =
                        (page + 1) as u16 | if r.lpn & rec::TOMB != 0 { TOMB_BIT } else { 0 };
                }
            }
            // (A record that does not decode names nothing the job could copy; the page's
            // data, if any, is lost with the block, and a read of it already failed.)
        }
        job.scanned = true;
        Ok(())
    }

    /// Whether the job's target can take a copy; a full one (pages skipped after
    /// conflicts: copies are at most one per offset) is replaced and the copies start over
    /// (`false`: the step ends there).
    fn target_has_room(&mut self, job: &mut GJob) -> bool {
        if self.blk[job.new as usize].next < self.ppb {
            return true;
        }
        let full = job.new;
        if self.restart_job(job) {
            self.blk[full as usize].role = Role::Victim;
            self.erase_q.push_back(full);
        }
        false
    }

    /// Starts the queue's next job (its target from the pool). `false`: none to start.
    fn start_job(&mut self) -> bool {
        while let Some(x) = self.queue.pop_front() {
            let old = self.map[x as usize].d;
            if old == NONE {
                self.queued[x as usize] = false;
                continue;
            }
            let Some(new) = self.take_free(Role::Data, x) else {
                self.queue.push_front(x);
                return false;
            };
            self.job = Some(GJob {
                x,
                old,
                new,
                scanned: false,
                o: 0,
                dtab: vec![0; self.ppb as usize],
                consumed: alloc::vec::Vec::new(),
                placed: alloc::vec::Vec::new(),
            });
            return true;
        }
        false
    }

    /// A job's target went bad or filled: a new target, and the copies start over.
    /// `false`: no block for one (the job waits).
    fn restart_job(&mut self, job: &mut GJob) -> bool {
        let Some(new) = self.take_free(Role::Data, job.x) else {
            return false;
        };
        job.new = new;
        job.o = 0;
        job.placed.clear();
        job.consumed.clear();
        true
    }

    /// The job's last step: the old block's erase; the target becomes the data block and
    /// the buffer pages it copied are dropped.
    fn finish_job(&mut self, now: Nanos, job: GJob) -> Result<(), FtlError> {
        let x = job.x;
        self.map[x as usize].d = job.new;
        let c = self.s.counters_mut();
        c.max_victim_valid = c.max_victim_valid.max(job.placed.len() as u64);
        for &(lpn, from, to) in &job.placed {
            self.follow(lpn, from, to);
        }
        self.blk[job.old as usize].role = Role::Victim;
        self.erase_victim(now, job.old)?;
        for (lpn, phys) in job.consumed {
            if self.buf.get(&lpn).is_some_and(|e| e.phys == phys) {
                self.buf_remove(lpn);
            }
        }
        self.queued[x as usize] = false;
        // Full again, it goes back on the queue only if the buffer holds newer pages of
        // it (the writes that found it full): a block merged with nothing new to take would
        // be copied and erased again and again — once re-queued unconditionally, one
        // filled logical block and 20,000 reads cost 1,538 erases.
        if self.blk[job.new as usize].next >= self.ppb && self.buffer_holds(x) {
            self.enqueue(x);
        }
        Ok(())
    }

    /// Whether the write buffer holds a page (or tombstone) of logical block `x`.
    fn buffer_holds(&self, x: u32) -> bool {
        let first = x as u64 * self.ppb as u64;
        self.buf
            .range(first..first + self.ppb as u64)
            .next()
            .is_some()
    }
}
