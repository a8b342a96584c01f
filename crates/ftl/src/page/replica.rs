//! Meta-Cure's replicas (AP's rival, Wang et al. DAC 2012): every critical host write also
//! programs `replicas` backup copies of the page, each in another block — the cold frontier
//! of the next dies in turn (another die when the chip has one; on a single die the cold
//! frontier, never the host frontier's block unless the die has no free block left for it).
//!
//! - **Reads**: a primary that does not decode is read again from each replica in turn (every
//!   read charged); the first that decodes answers (`replica_rescues`).
//! - **GC** moves replicas like any valid page (their records stay replica records); when
//!   it cannot read a primary, a replica's data are copied in its place (a GC copy record:
//!   the new primary), so GC loses a critical page only when every copy is unreadable.
//! - **Overwrite, trim, or a non-critical rewrite** invalidate the replica set.
//! - **Identity on flash**: a replica's record names its logical page and the *version* it
//!   copies (the low 32 bits of the sequence number of the host write that created the
//!   data, see [`OobRecord::replica`]). After a crash a replica counts only if its version
//!   is the version the map ends up with: the newest host write (or trim) of the page found
//!   since the checkpoint — such records are never erased before the next checkpoint — or
//!   else the version the checkpoint recorded. A replica of a write the crash lost (its
//!   primary torn) is therefore never taken for the older data the map reverts to.
//! - **Checkpoint**: the replica sets (logical page, version, pages); roll-forward keeps a
//!   checkpointed replica unless its block was erased since (a charged header read) or its
//!   page got a newer version, and adds the replica records its scan finds; a full scan
//!   takes every replica record it reads. At most `replicas` per page are kept (the newest
//!   first).

use super::map::MapStore;
use super::{PageFtl, INVALID, LOST};
use crate::bounded::Cap;
use crate::policy::WriteKind;
use crate::substrate::pace::paced;
use crate::substrate::{Payload, Sense, Sensed, COLD};
use crate::{Cause, FtlError};
use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use controller::{DataClass, OobRecord};
use nand::{ErrorModel, Nanos, Storage};

/// Most backup copies a critical page may have.
pub const MAX_REPLICAS: u32 = 4;

/// A critical page's replicas: the version they copy and where they are.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct ReplicaSet {
    /// Sequence number of the host write whose data they hold.
    pub version: u64,
    /// Flat physical pages.
    pub pages: Vec<u32>,
}

/// Replica sets by logical page.
pub(crate) type Replicas = BTreeMap<u32, ReplicaSet>;

impl<S: Storage, M: ErrorModel> PageFtl<S, M> {
    /// Invalidates `lpn`'s replicas (superseded by the write or trim with sequence number
    /// `by`).
    pub(crate) fn drop_replicas(&mut self, lpn: u64, by: u64) {
        if let Some(set) = self.replicas.remove(&(lpn as u32)) {
            for p in set.pages {
                self.p2l[p as usize] = INVALID;
                let b = self.s.block_of(p);
                self.s.drop_valid(b, by);
            }
        }
    }

    /// Programs the configured number of replicas of `lpn` (just written on `die` by the
    /// host write `version`, holding `data`).
    pub(crate) fn write_replicas(
        &mut self,
        now: Nanos,
        die: usize,
        lpn: u64,
        data: &[u8],
        class: DataClass,
        version: u64,
    ) -> Result<(), FtlError> {
        let key = lpn as u32;
        // The version is known before any replica exists: a checkpoint taken while they
        // are written (GC on their die) records it.
        self.replicas.insert(
            key,
            ReplicaSet {
                version,
                pages: Vec::new(),
            },
        );
        let ndies = self.s.dies.len();
        for i in 0..self.cfg.replicas as usize {
            let d = (die + 1 + i) % ndies;
            paced(self, now, d, false)?;
            // Each failed program retires a block of the die.
            let mut cap = Cap::new(self.s.die_blocks_cap(), "a replica retried every block");
            let phys = loop {
                cap.tick()?;
                let s = &mut self.s;
                let phys = s.allocate_for(now, d, COLD, WriteKind::Copy(class))?;
                let seq = s.next_seq();
                let rec = OobRecord::replica(lpn, version, seq, class);
                if s.program_page(now, phys, Payload::Data(data), rec, Cause::Host, None)?
                    .is_some()
                {
                    let b = s.block_of(phys);
                    s.last_write[b as usize] = now;
                    s.note_program(d, phys, seq);
                    break phys;
                }
            };
            self.p2l[phys as usize] = key;
            let b = self.s.block_of(phys);
            self.s.add_valid(b);
            self.s.counters_mut().replica_programs += 1;
            self.s.close_if_full(phys);
            // GC on the next replica's die may not have moved this set away: look it up.
            if let Some(set) = self.replicas.get_mut(&key) {
                set.pages.push(phys);
            }
        }
        Ok(())
    }

    /// After the primary of `lpn` failed to decode: reads its replicas in turn into
    /// `data`. `true` if one decoded (a rescue).
    pub(crate) fn read_replicas(
        &mut self,
        now: Nanos,
        lpn: u64,
        data: &mut [u8],
    ) -> Result<bool, FtlError> {
        let Some(set) = self.replicas.get(&(lpn as u32)) else {
            return Ok(false);
        };
        for p in set.pages.clone() {
            if self.read_replica(now, p, data)? {
                self.s.counters_mut().replica_rescues += 1;
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// One charged, counted read of replica page `p` into `data`, with its ECC read
    /// feedback; whether it decoded.
    fn read_replica(&mut self, now: Nanos, p: u32, data: &mut [u8]) -> Result<bool, FtlError> {
        self.s.counters_mut().replica_reads += 1;
        Ok(
            match self.s.sense(now, p, Sense::Page(data), Cause::Host)?.0 {
                Sensed::Data(info) => {
                    self.s
                        .read_feedback(now, p, info.corrected, false, Some(&info));
                    true
                }
                Sensed::Erased => false,
                Sensed::Failed => {
                    self.s.read_feedback(now, p, 0, true, None);
                    false
                }
            },
        )
    }

    /// Meta-Cure's read of every replica of `lpn` beside a primary that decoded
    /// ([`ReplicaReads::Always`](super::ReplicaReads::Always)): each read charged and
    /// counted, its data (`len` bytes: the read's buffer size) discarded — the primary
    /// answered.
    pub(crate) fn read_every_replica(
        &mut self,
        now: Nanos,
        lpn: u64,
        len: usize,
    ) -> Result<(), FtlError> {
        let Some(set) = self.replicas.get(&(lpn as u32)) else {
            return Ok(());
        };
        let mut scratch = core::mem::take(&mut self.replica_buf);
        scratch.resize(len, 0);
        let mut r = Ok(());
        for p in set.pages.clone() {
            if let Err(e) = self.read_replica(now, p, &mut scratch) {
                r = Err(e);
                break;
            }
        }
        self.replica_buf = scratch;
        r
    }

    /// GC moved replica `src` of `lpn` to `dst`. `false` if `src` is no replica of it.
    pub(crate) fn moved_replica(&mut self, lpn: u64, src: u32, dst: u32) -> bool {
        let Some(set) = self.replicas.get_mut(&(lpn as u32)) else {
            return false;
        };
        let Some(slot) = set.pages.iter_mut().find(|p| **p == src) else {
            return false;
        };
        *slot = dst;
        self.p2l[src as usize] = INVALID;
        self.p2l[dst as usize] = lpn as u32;
        let (sb, db) = (self.s.block_of(src), self.s.block_of(dst));
        self.s.drop_valid(sb, 0);
        self.s.add_valid(db);
        true
    }

    /// GC could not read `src` of `lpn`, nor any replica standing in for it: a lost replica
    /// leaves its set (`true`: handled); a lost primary takes its set with it (the page is
    /// lost; `false`).
    pub(crate) fn lost_with_replicas(&mut self, lpn: u64, src: u32) -> bool {
        let key = lpn as u32;
        let Some(set) = self.replicas.get_mut(&key) else {
            return false;
        };
        if let Some(i) = set.pages.iter().position(|&p| p == src) {
            set.pages.remove(i);
            self.p2l[src as usize] = INVALID;
            return true;
        }
        let by = self.s.seq;
        self.drop_replicas(lpn, by);
        false
    }

    /// The replicas that can stand in for `lpn`'s primary `src` when GC cannot read it.
    pub(crate) fn replicas_of_primary(&self, lpn: u64, src: u32) -> Vec<u32> {
        if self.map.peek(lpn) != Some(src) {
            return Vec::new();
        }
        self.replicas
            .get(&(lpn as u32))
            .map(|set| set.pages.clone())
            .unwrap_or_default()
    }

    /// The replica sets' part of `verify`: every set belongs to a mapped critical page,
    /// holds at most `replicas` distinct pages other than its primary, each claimed by
    /// that page in the reverse map. Returns the replicas per block (for valid counts).
    pub(crate) fn verify_replicas(&self, per_block: &mut [u32]) -> Result<(), String> {
        if self.cfg.replicas == 0 && !self.replicas.is_empty() {
            return Err(format!(
                "{} replica sets with replicas = 0",
                self.replicas.len()
            ));
        }
        for (&l, set) in &self.replicas {
            let lpn = l as u64;
            let primary = self.map.peek(lpn).unwrap_or(INVALID);
            if lpn >= self.logical || primary == INVALID || primary == LOST {
                return Err(format!("replica set of unmapped logical page {lpn}"));
            }
            if !self.is_critical(lpn) {
                return Err(format!("replica set of non-critical logical page {lpn}"));
            }
            if set.pages.len() > self.cfg.replicas as usize {
                return Err(format!(
                    "logical page {lpn} has {} replicas (limit {})",
                    set.pages.len(),
                    self.cfg.replicas
                ));
            }
            for (i, &p) in set.pages.iter().enumerate() {
                if p == primary || set.pages[..i].contains(&p) {
                    return Err(format!(
                        "replica {p} of logical page {lpn} is its primary or listed twice"
                    ));
                }
                if self.p2l.get(p as usize) != Some(&l) {
                    return Err(format!(
                        "replica {p} of logical page {lpn} is not claimed by it in the reverse map"
                    ));
                }
                per_block[self.s.block_of(p) as usize] += 1;
            }
        }
        Ok(())
    }

    /// Whether flat page `p` is a replica of logical page `l`.
    pub(crate) fn is_replica(&self, l: u32, p: u32) -> bool {
        self.replicas
            .get(&l)
            .is_some_and(|set| set.pages.contains(&p))
    }
}

/// Serialises replica sets: count, then per set its logical page, version, page count
/// and pages.
pub(crate) fn encode(sets: &Replicas, out: &mut Vec<u8>) {
    out.extend_from_slice(&(sets.len() as u32).to_le_bytes());
    for (&l, set) in sets {
        out.extend_from_slice(&l.to_le_bytes());
        out.extend_from_slice(&set.version.to_le_bytes());
        out.extend_from_slice(&(set.pages.len() as u32).to_le_bytes());
        for p in &set.pages {
            out.extend_from_slice(&p.to_le_bytes());
        }
    }
}

/// Bytes a replica section can take on a volume of `physical` pages with `replicas` per
/// critical page (each critical page and its replicas occupy `1 + replicas` pages).
pub(crate) fn worst_case_bytes(physical: u64, replicas: u32) -> u64 {
    if replicas == 0 {
        return 0;
    }
    let sets = physical / (1 + replicas as u64);
    4 + sets * (16 + 4 * replicas as u64)
}
