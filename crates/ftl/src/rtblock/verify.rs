//! `RtBlockFtl::verify`: roles ↔ map ↔ pool ↔ buffer ↔ jobs, and every logical page's read
//! path against the shadow map.

use super::*;

impl<S: Storage, M: ErrorModel> RtBlockFtl<S, M> {
    /// Checks every invariant: roles ↔ map ↔ pool ↔ buffer ↔ jobs, and every logical
    /// page's read path finds the newest copy the shadow records.
    pub fn verify(&self) -> Result<(), Invariant> {
        let bad = |m: String| Err(Invariant::Structure(m));
        let n = self.blk.len();
        let mut owner = vec![0u8; n];
        for (x, e) in self.map.iter().enumerate() {
            for (b, role) in [(e.d, Role::Data), (e.r, Role::Append), (e.b, Role::Append)] {
                if b == NONE {
                    continue;
                }
                let k = self.blk[b as usize];
                if k.role != role || k.lbn != x as u32 {
                    return bad(format!(
                        "logical block {x}: block {b} is {k:?}, not {role:?}"
                    ));
                }
                owner[b as usize] += 1;
            }
            if self.kind == RtKind::Gftl && (e.r != NONE || e.b != NONE) {
                return bad(format!("GFTL logical block {x} has RFTL blocks"));
            }
            if e.b != NONE && !self.rjobs.contains_key(&(x as u32)) {
                return bad(format!("logical block {x} has a buffer but no job"));
            }
        }
        if let Some(j) = &self.job {
            owner[j.new as usize] += 1;
            if self.map[j.x as usize].d != j.old || self.blk[j.new as usize].lbn != j.x {
                return bad(format!("GFTL job {j:?} does not match the map"));
            }
        }
        for (&x, j) in &self.rjobs {
            if self.map[x as usize].d != j.new {
                owner[j.new as usize] += 1;
            }
            if self.map[x as usize].b == NONE || self.blk[j.new as usize].lbn != x {
                return bad(format!("RFTL job of {x} has no buffer or a foreign target"));
            }
        }
        for &b in &self.buf_blocks {
            owner[b as usize] += 1;
            if self.blk[b as usize].role != Role::Buffer {
                return bad(format!("buffer block {b} is {:?}", self.blk[b as usize]));
            }
        }
        for &b in &self.erase_q {
            if self.blk[b as usize].role != Role::Victim || self.buf_live[b as usize] != 0 {
                return bad(format!("queued erase of {b}: {:?}", self.blk[b as usize]));
            }
        }
        let mut in_pool = vec![false; n];
        for Reverse((e, b)) in self.free.iter() {
            if self.blk[*b as usize].role != Role::Free || in_pool[*b as usize] {
                return bad(format!("pool block {b} is {:?}", self.blk[*b as usize]));
            }
            if *e != self.s.erase[*b as usize] {
                return bad(format!("pool block {b} keyed by a stale erase count"));
            }
            in_pool[*b as usize] = true;
        }
        for (b, k) in self.blk.iter().enumerate() {
            let expect = match k.role {
                Role::Data | Role::Append | Role::Buffer => 1,
                _ => 0,
            };
            if owner[b] != expect {
                return bad(format!("block {b} ({k:?}) owned {} times", owner[b]));
            }
            if (k.role == Role::Free) != in_pool[b] {
                return bad(format!("block {b} ({k:?}) and the pool disagree"));
            }
            if k.next > self.ppb {
                return bad(format!(
                    "block {b}: write pointer {} past the block",
                    k.next
                ));
            }
        }
        // The buffer's map against its blocks' page owners and live counts.
        let mut live = vec![0u32; n];
        for (&lpn, e) in &self.buf {
            let b = e.phys / self.ppb;
            if self.blk[b as usize].role != Role::Buffer {
                return bad(format!(
                    "buffer entry of {lpn} in block {b}, not a buffer block"
                ));
            }
            let pages = self.buf_pages.get(&b);
            if pages.and_then(|v| v.get((e.phys % self.ppb) as usize)) != Some(&lpn) {
                return bad(format!("buffer entry of {lpn} at {} not recorded", e.phys));
            }
            live[b as usize] += 1;
        }
        if live != self.buf_live {
            return bad("buffer live counts differ from the buffer map".into());
        }
        for (&b, t) in &self.tab {
            if self.blk[b as usize].role != Role::Append || t.len() != self.ppb as usize {
                return bad(format!(
                    "offset table of block {b} ({:?})",
                    self.blk[b as usize]
                ));
            }
        }
        for x in 0..self.lbns {
            if self.queued[x as usize]
                && !self.queue.contains(&x)
                && self.job.as_ref().is_none_or(|j| j.x != x)
            {
                return bad(format!("logical block {x} marked queued but not queued"));
            }
        }
        for lpn in 0..self.logical_pages() {
            let want = self.shadow[lpn as usize];
            let got = self.lookup(lpn).unwrap_or(NONE);
            if want != got {
                return bad(format!(
                    "logical page {lpn}: newest copy at {want:#x}, the read path finds {got:#x}"
                ));
            }
        }
        self.s.verify_erase_counts().map_err(Invariant::Mirror)?;
        Ok(())
    }
}
