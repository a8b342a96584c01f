//! The page-level FTL's checkpoint: its snapshot (map, block states, erase counts,
//! frontiers, sequence counter) as a byte stream in the substrate's checkpoint region, and
//! the trim log as that region's log (records of [`super::trimlog`]).
//!
//! **Trim log.** Trims are volatile until persisted: on `flush`, when a log page's worth
//! is pending, and before an erase of a block one of them superseded a page of (the erase
//! may destroy the only stale copy a lost trim would resurrect), pending trims are appended
//! to the log of the committed generation, each record carrying the trim's sequence number
//! so recovery orders it against data pages. A record is a *range* of logical pages: a
//! host's discard of any length (mkfs's whole device included) is one record, and a trim
//! touching the last pending one with the next sequence number is merged into it. When the
//! region has no room for another log page a new checkpoint is written instead.

use super::map::MapStore;
use super::trimlog::{decode_trims, encode_trims, TrimRange, TRIM_RECORD};
use super::{PageFtl, INVALID};
use crate::bytes::Reader;
use crate::substrate::{BState, COLD, HOST};
use crate::FtlError;
use alloc::vec;
use alloc::vec::Vec;
use nand::{ErrorModel, Nanos, Storage};

/// `frontier` entries with no open block.
const NO_BLOCK: u32 = u32::MAX;

/// Snapshot block states (one byte each).
pub(crate) mod code {
    pub const FREE: u8 = 0;
    pub const FULL: u8 = 1;
    pub const OPEN: u8 = 2;
    pub const RETIRING: u8 = 3;
    pub const BAD: u8 = 4;
    pub const REGION: u8 = 5;
    /// Flag on a state byte: the block is in SLC mode.
    pub const SLC: u8 = 0x40;
}

/// What a checkpoint holds: everything needed to resume without scanning the data blocks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Snapshot {
    /// Sequence counter: every data page and trim with a smaller number is reflected.
    pub seq: u64,
    /// Volume size in logical pages.
    pub logical: u64,
    /// (block, next page) of the host and cold frontier of every die.
    pub frontiers: Vec<[(u32, u32); 2]>,
    /// State of every block ([`code`]).
    pub states: Vec<u8>,
    /// Erase count of every block.
    pub erase: Vec<u32>,
    /// The logical-to-physical map (with a demand-paged map: filled at load from `paged`).
    pub l2p: Vec<u32>,
    /// A demand-paged map's section (directory and dirty cached translation pages) in
    /// place of the map; flagged by bit 63 of the stored volume size.
    pub paged: Option<super::paged::PagedPart>,
    /// Per block: in SLC mode (the flush buffer's host blocks; stored as flag
    /// [`code::SLC`] of the state byte).
    pub slc: Vec<bool>,
    /// Logical pages whose last write was critical, one bit each (stored as ranges or
    /// as the bitmap, whichever is shorter; a snapshot without the section has none).
    pub critical: Vec<u64>,
    /// Meta-Cure's replica sets (logical page → version and pages); the section is absent
    /// when there are none.
    pub replicas: super::replica::Replicas,
    /// The ECC-strength policy's non-critical per-page state (FLARES: p_next, errc, failc
    /// of every physical page), written by a clean shutdown only; absent otherwise.
    pub policy: Option<Vec<u8>>,
}

/// Tag of the policy-state section (after the replica section, which is then always
/// written, possibly empty).
const POLICY_TAG: u32 = 0x4652_5050; // "PPRF"

/// The snapshot format this build writes: the byte at offset 15 (see FORMAT.md, "Page
/// kernel snapshot"). Version 0 is the format before the byte existed (offset 15 is 0x00,
/// or 0x80 with a paged map); both are read.
pub(crate) const FORMAT_VERSION: u8 = 1;
/// The largest volume size the 48-bit field holds, in logical pages.
const LOGICAL_MASK: u64 = (1 << 48) - 1;
/// Flags byte (offset 14): a paged map's section follows instead of the map.
const FLAG_PAGED: u8 = 1;
/// Version 0's flag on the stored volume size: a paged map's section follows.
const V0_PAGED: u64 = 1 << 63;

/// Critical-page section encodings.
const CRIT_RANGES: u32 = 0;
const CRIT_BITMAP: u32 = 1;

/// Runs of set bits in a bitmap of `n` bits: (first, length). Whole zero and whole set
/// words are stepped over a word at a time (a checkpoint of a large volume walks millions
/// of bits).
fn runs(bits: &[u64], n: u64) -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    let mut start: Option<u64> = None;
    let mut i = 0u64;
    while i < n {
        let w = bits[(i / 64) as usize];
        // A whole word of one value is one step of 64 bits; otherwise one bit.
        let whole = i.is_multiple_of(64) && i + 64 <= n && (w == 0 || w == u64::MAX);
        let (set, step) = if whole {
            (w == u64::MAX, 64)
        } else {
            (w >> (i % 64) & 1 == 1, 1)
        };
        match (set, start) {
            (true, None) => start = Some(i),
            (false, Some(a)) => {
                out.push((a as u32, (i - a) as u32));
                start = None;
            }
            _ => {}
        }
        i += step;
    }
    if let Some(a) = start {
        out.push((a as u32, (n - a) as u32));
    }
    out
}

/// Appends `v` as little-endian `u32`s (one resize, then a loop the compiler turns into
/// straight copies: a large volume's map is millions of entries).
fn put_u32s(out: &mut Vec<u8>, v: &[u32]) {
    let at = out.len();
    out.resize(at + v.len() * 4, 0);
    for (d, x) in out[at..].chunks_exact_mut(4).zip(v) {
        d.copy_from_slice(&x.to_le_bytes());
    }
}

/// A snapshot's contents as the encoder reads them, borrowed: from a [`Snapshot`], or from
/// the live FTL without copying its map (a checkpoint of a large volume).
pub(crate) struct Parts<'a> {
    seq: u64,
    logical: u64,
    frontiers: &'a [[(u32, u32); 2]],
    /// State bytes with the [`code::SLC`] flag merged in.
    states: &'a [u8],
    erase: &'a [u32],
    l2p: &'a [u32],
    paged: Option<&'a super::paged::PagedPart>,
    critical: &'a [u64],
    replicas: &'a super::replica::Replicas,
    policy: Option<&'a [u8]>,
}

impl Parts<'_> {
    /// Serialises the snapshot into `out` (cleared first), ending with a CRC32C of
    /// everything before it.
    fn encode_into(&self, crc: fn(&[u8]) -> u32, out: &mut Vec<u8>) {
        out.clear();
        out.reserve(40 + self.frontiers.len() * 16 + self.states.len() * 5 + self.l2p.len() * 4);
        out.extend_from_slice(&self.seq.to_le_bytes());
        debug_assert!(
            self.logical <= LOGICAL_MASK,
            "a volume of 2^48 pages or more"
        );
        let flags = if self.paged.is_some() { FLAG_PAGED } else { 0 };
        let word = self.logical | (flags as u64) << 48 | (FORMAT_VERSION as u64) << 56;
        out.extend_from_slice(&word.to_le_bytes());
        out.extend_from_slice(&(self.frontiers.len() as u32).to_le_bytes());
        out.extend_from_slice(&(self.states.len() as u32).to_le_bytes());
        for f in self.frontiers {
            for (b, n) in f {
                out.extend_from_slice(&b.to_le_bytes());
                out.extend_from_slice(&n.to_le_bytes());
            }
        }
        out.extend_from_slice(self.states);
        put_u32s(out, self.erase);
        match self.paged {
            Some(p) => p.encode(out),
            None => put_u32s(out, self.l2p),
        }
        let runs = runs(self.critical, self.logical);
        if runs.len() as u64 * 8 <= self.logical.div_ceil(64) * 8 {
            out.extend_from_slice(&CRIT_RANGES.to_le_bytes());
            out.extend_from_slice(&(runs.len() as u32).to_le_bytes());
            for (a, n) in runs {
                out.extend_from_slice(&a.to_le_bytes());
                out.extend_from_slice(&n.to_le_bytes());
            }
        } else {
            out.extend_from_slice(&CRIT_BITMAP.to_le_bytes());
            for w in self.critical {
                out.extend_from_slice(&w.to_le_bytes());
            }
        }
        if !self.replicas.is_empty() || self.policy.is_some() {
            super::replica::encode(self.replicas, out);
        }
        if let Some(p) = self.policy {
            out.extend_from_slice(&POLICY_TAG.to_le_bytes());
            out.extend_from_slice(&(p.len() as u32).to_le_bytes());
            out.extend_from_slice(p);
        }
        let c = crc(out);
        out.extend_from_slice(&c.to_le_bytes());
    }
}

/// The most bytes a snapshot without replicas or policy state takes for a chip of `dies`
/// dies and `blocks` blocks and a volume of `logical` pages (what a checkpoint written in
/// steps is sized by).
pub(crate) fn max_snapshot_len(dies: usize, blocks: usize, logical: u64) -> usize {
    let header = 8 + 8 + 4 + 4;
    let critical = 4 + 4 + logical.div_ceil(64) as usize * 8;
    header + dies * 16 + blocks * 5 + logical as usize * 4 + critical + 4
}

/// State bytes of `states` with the [`code::SLC`] flag of `slc` merged in.
fn state_bytes(states: &[u8], slc: impl Iterator<Item = bool>) -> Vec<u8> {
    states
        .iter()
        .zip(slc)
        .map(|(&st, slc)| if slc { st | code::SLC } else { st })
        .collect()
}

/// The format version of a whole snapshot stream (its CRC checks and it is long enough to
/// say): what a mount reports when it is not one this build reads.
pub(crate) fn stream_version(bytes: &[u8], crc: fn(&[u8]) -> u32) -> Option<u8> {
    let n = bytes.len().checked_sub(4)?;
    if n < 16 || crc(&bytes[..n]).to_le_bytes() != bytes[n..] {
        return None;
    }
    Some(match bytes[15] {
        0 | 0x80 => 0,
        v => v,
    })
}

impl Snapshot {
    /// Serialises the snapshot, ending with a CRC32C of everything before it.
    #[cfg(test)]
    pub fn encode(&self, crc: fn(&[u8]) -> u32) -> Vec<u8> {
        let states = state_bytes(&self.states, self.slc.iter().copied());
        let mut out = Vec::new();
        Parts {
            seq: self.seq,
            logical: self.logical,
            frontiers: &self.frontiers,
            states: &states,
            erase: &self.erase,
            l2p: &self.l2p,
            paged: self.paged.as_ref(),
            critical: &self.critical,
            replicas: &self.replicas,
            policy: self.policy.as_deref(),
        }
        .encode_into(crc, &mut out);
        out
    }

    /// Parses a snapshot for a chip of `dies` dies and `blocks` blocks; `None` if the bytes
    /// are not one (wrong sizes, CRC mismatch).
    pub fn decode(bytes: &[u8], dies: usize, blocks: usize, crc: fn(&[u8]) -> u32) -> Option<Self> {
        let n = bytes.len().checked_sub(4)?;
        let stored = u32::from_le_bytes(bytes[n..].try_into().ok()?);
        if crc(&bytes[..n]) != stored {
            return None;
        }
        let mut r = Reader(&bytes[..n]);
        let seq = r.u64()?;
        let word = r.u64()?;
        let (logical, paged_map) = match (word >> 56) as u8 {
            // Version 0: the size in 63 bits, the paged flag in bit 63.
            0 | 0x80 => (word & !V0_PAGED, word & V0_PAGED != 0),
            FORMAT_VERSION => {
                let flags = (word >> 48) as u8;
                if flags & !FLAG_PAGED != 0 {
                    return None;
                }
                (word & LOGICAL_MASK, flags & FLAG_PAGED != 0)
            }
            _ => return None,
        };
        if r.u32()? as usize != dies || r.u32()? as usize != blocks {
            return None;
        }
        let mut frontiers = Vec::with_capacity(dies);
        for _ in 0..dies {
            frontiers.push([(r.u32()?, r.u32()?), (r.u32()?, r.u32()?)]);
        }
        let raw = r.take(blocks)?;
        let states = raw.iter().map(|&b| b & !code::SLC).collect();
        let slc = raw.iter().map(|&b| b & code::SLC != 0).collect();
        let mut erase = Vec::with_capacity(blocks);
        for _ in 0..blocks {
            erase.push(r.u32()?);
        }
        let (l2p, paged) = if paged_map {
            (
                Vec::new(),
                Some(super::paged::PagedPart::decode(&mut r, logical)?),
            )
        } else {
            let map_bytes = usize::try_from(logical.checked_mul(4)?).ok()?;
            let l2p = r
                .take(map_bytes)?
                .chunks_exact(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect();
            (l2p, None)
        };
        let critical = decode_critical(&mut r, logical)?;
        // Then, if present, the replica sets.
        let replicas = decode_replicas(&mut r, logical)?;
        // Then, if present, the policy's state.
        let mut policy = None;
        if !r.0.is_empty() {
            if r.u32()? != POLICY_TAG {
                return None;
            }
            let n = r.u32()? as usize;
            policy = Some(r.take(n)?.to_vec());
            if !r.0.is_empty() {
                return None;
            }
        }
        Some(Snapshot {
            seq,
            logical,
            frontiers,
            states,
            erase,
            l2p,
            paged,
            slc,
            critical,
            replicas,
            policy,
        })
    }
}

/// The critical-page section of a snapshot (ranges or a bitmap, whichever was shorter) as
/// a bitmap of `logical` pages; snapshots written before the section existed end before
/// it: nothing is critical. `None`: malformed.
fn decode_critical(r: &mut Reader<'_>, logical: u64) -> Option<Vec<u64>> {
    let words = logical.div_ceil(64) as usize;
    let mut critical = vec![0u64; words];
    // Snapshots written before the section existed end here: nothing is critical.
    if !r.0.is_empty() {
        match r.u32()? {
            CRIT_RANGES => {
                for _ in 0..r.u32()? {
                    let (a, n) = (r.u32()? as u64, r.u32()? as u64);
                    if a + n > logical {
                        return None;
                    }
                    for i in a..a + n {
                        critical[(i / 64) as usize] |= 1 << (i % 64);
                    }
                }
            }
            CRIT_BITMAP => {
                for w in critical.iter_mut() {
                    *w = r.u64()?;
                }
                if !logical.is_multiple_of(64) && critical[words - 1] >> (logical % 64) != 0 {
                    return None;
                }
            }
            _ => return None,
        }
    }
    Some(critical)
}

/// The replica sets of a snapshot, if present.
fn decode_replicas(r: &mut Reader<'_>, logical: u64) -> Option<super::replica::Replicas> {
    let mut replicas = super::replica::Replicas::new();
    if !r.0.is_empty() {
        for _ in 0..r.u32()? {
            let (l, version, n) = (r.u32()?, r.u64()?, r.u32()?);
            if l as u64 >= logical || n > super::MAX_REPLICAS {
                return None;
            }
            let pages = (0..n).map(|_| r.u32()).collect::<Option<Vec<u32>>>()?;
            replicas.insert(l, super::replica::ReplicaSet { version, pages });
        }
    }
    Some(replicas)
}

/// A loaded checkpoint: its snapshot and its trim log.
pub(crate) type Loaded = (Snapshot, Vec<TrimRange>);

impl<S: Storage, M: ErrorModel> PageFtl<S, M> {
    /// Encodes the current state as a snapshot into `out` (frontier blocks are recorded as
    /// open; blocks being collected or waiting for their erase as full), borrowing the map
    /// rather than copying it, with the policy's state `policy`.
    pub(crate) fn encode_snapshot(&self, policy: Option<&[u8]>, out: &mut Vec<u8>) {
        let frontiers: Vec<[(u32, u32); 2]> = self
            .s
            .dies
            .iter()
            .map(|d| {
                let f = |s: usize| {
                    d.frontier[s]
                        .map(|f| (f.block, f.next))
                        .unwrap_or((NO_BLOCK, 0))
                };
                [f(HOST), f(COLD)]
            })
            .collect();
        let states: Vec<u8> = self
            .s
            .state
            .iter()
            .map(|s| match s {
                BState::Free => code::FREE,
                BState::Open => code::OPEN,
                BState::Full | BState::Collecting | BState::Dirty => code::FULL,
                BState::Retiring => code::RETIRING,
                BState::Bad => code::BAD,
                BState::Region | BState::Map => code::REGION,
            })
            .collect();
        let states = state_bytes(&states, self.s.slc.iter().map(|&m| m == Some(true)));
        let paged = match &self.map {
            super::map::MapSlot::Paged(p) => Some(p.part()),
            _ => None,
        };
        Parts {
            seq: self.s.seq,
            logical: self.logical,
            frontiers: &frontiers,
            states: &states,
            erase: &self.s.erase,
            l2p: match paged {
                Some(_) => &[],
                None => self
                    .map
                    .entries()
                    .expect("the page kernel's checkpoint encodes a resident map"),
            },
            paged: paged.as_ref(),
            critical: &self.critical,
            replicas: &self.replicas,
            policy,
        }
        .encode_into(self.s.controller().crc32c_fn(), out);
    }

    /// Whether a flush writes a checkpoint: once `checkpoint_interval` blocks have opened
    /// since the last one — on any one die when roll-forward's young blocks are bounded per
    /// die for a real-time pacing (`young_budget`), in all otherwise.
    pub(crate) fn checkpoint_due(&self) -> bool {
        if self.s.young_budget > 0 {
            (0..self.s.dies.len()).any(|d| self.s.opened_per_die[d] >= self.flush_due_on(d))
        } else {
            self.s.opened_since_cp >= self.checkpoint_interval_blocks()
        }
    }

    /// With a young budget (a real-time pacing with roll-forward recovery): blocks opened
    /// on `die` since the last checkpoint at which a flush writes the next one. The page
    /// kernel's own rule per die — 4, more when the checkpoint is large (its pages amortised
    /// over four blocks of writes) — within what the die may open
    /// ([`young_left`](crate::substrate::Substrate::young_left)): a host that flushes
    /// checkpoints as often as under foreground GC, one that does not is bounded by the
    /// die's free blocks and then the budget (the checkpoint written in steps beside the
    /// writes). A configured `checkpoint_interval` is the budget and this both.
    pub(crate) fn flush_due_on(&self, die: usize) -> u32 {
        let budget = self.s.young_budget;
        if self.cfg.checkpoint_interval > 0 {
            return budget;
        }
        let ndies = self.s.dies.len().max(1) as u32;
        let amortised = (4 * self.region.body_pages()).div_ceil(self.s.ppb().max(1) * ndies);
        let limit = self.s.opened_per_die[die].saturating_add(self.s.young_left(die));
        amortised.max(4).min(limit)
    }

    /// Blocks opened since the last checkpoint at which a flush writes the next one:
    /// `checkpoint_interval`, or by default 4 per die, more when the checkpoint is large
    /// (its pages amortised over at least four blocks of writes).
    pub(crate) fn checkpoint_interval_blocks(&self) -> u32 {
        // (With a real-time pacing and roll-forward recovery it counts blocks per die: see
        // `checkpoint_due`.)
        if self.cfg.checkpoint_interval > 0 {
            self.cfg.checkpoint_interval
        } else {
            let amortised = (4 * self.region.body_pages()).div_ceil(self.s.ppb().max(1));
            (4 * self.s.dies.len() as u32).max(amortised)
        }
    }

    /// Writes a new checkpoint generation (sealing every frontier first, so nothing the
    /// snapshot maps can later be damaged by a paired-page program). Pending trims are
    /// part of the snapshot and are dropped.
    pub(crate) fn write_checkpoint(&mut self, now: Nanos) -> Result<(), FtlError> {
        self.write_checkpoint_with(now, None)
    }

    /// [`write_checkpoint`](Self::write_checkpoint) carrying the policy's state `policy`
    /// (a clean shutdown's).
    pub(crate) fn write_checkpoint_with(
        &mut self,
        now: Nanos,
        policy: Option<Vec<u8>>,
    ) -> Result<(), FtlError> {
        self.abandon_steps();
        self.s.seal_all(now)?;
        // One encoding buffer lives across checkpoints (a large volume's snapshot is
        // megabytes: no fresh allocation, no page faults, each time).
        let mut bytes = core::mem::take(&mut self.cp_buf);
        self.encode_snapshot(policy.as_deref(), &mut bytes);
        let room = self.region.capacity(&self.s);
        if policy.is_some() && bytes.len() > room {
            // A region sized by hand too small for the policy's state: it is advice, the
            // checkpoint goes without it.
            self.encode_snapshot(None, &mut bytes);
        }
        let written = self.region.write_generation(&mut self.s, now, &bytes);
        self.cp_buf = bytes;
        written?;
        if let super::map::MapSlot::Paged(p) = &mut self.map {
            p.committed(&self.s);
        }
        self.pending_trims.clear();
        self.s.opened_since_cp = 0;
        self.s.opened_per_die.fill(0);
        // Blocks written after this checkpoint are young: the open frontiers (their pages
        // from `next` on) and every block opened from now on.
        self.s.young.fill(false);
        for d in 0..self.s.dies.len() {
            for f in self.s.dies[d].frontier.into_iter().flatten() {
                self.s.young[f.block as usize] = self.s.cfg.young_rule;
            }
        }
        self.s.settle_young();
        self.s.counters_mut().checkpoints += 1;
        crate::debug_verify("checkpoint", || self.verify());
        Ok(())
    }

    /// Appends pending trims to the committed generation's trim log (or writes a new
    /// checkpoint when the region has no room).
    pub(crate) fn persist_trims(&mut self, now: Nanos) -> Result<(), FtlError> {
        if self.pending_trims.is_empty() {
            return Ok(());
        }
        if self.steps.is_some() {
            // A checkpoint being written in steps carries them in its trailer too.
            self.note_trims_for_steps(now)?;
        }
        let entries = encode_trims(&self.pending_trims);
        self.s.counters_mut().trim_records += self.pending_trims.len() as u64;
        if !self
            .region
            .append_log(&mut self.s, now, &entries, TRIM_RECORD)?
        {
            return self.write_checkpoint(now);
        }
        self.pending_trims.clear();
        Ok(())
    }

    /// Reads the newest complete checkpoint generation from the region: its snapshot and
    /// its trim log. `None` if the region holds no valid checkpoint.
    pub(crate) fn load_checkpoint(&mut self, now: Nanos) -> Result<Option<Loaded>, FtlError> {
        let crc = self.s.controller().crc32c_fn();
        let (ndies, nblocks) = (self.s.dies.len(), self.s.state.len());
        let loaded = self.region.load_versioned(
            &mut self.s,
            now,
            ("page-kernel checkpoint", FORMAT_VERSION),
            |body| stream_version(body, crc),
            |body| Snapshot::decode(body, ndies, nblocks, crc),
        )?;
        if loaded.is_none() && self.region.seen {
            return Err(FtlError::Corrupt(
                "the checkpoint region is damaged: it holds checkpoint pages but no complete generation",
            ));
        }
        if let Some((snap, _)) = &loaded {
            if let Some(p) = &snap.policy {
                // The non-critical profile part a clean shutdown left (stale pages are
                // harmless: it is advice the policy re-measures).
                self.s.ecc.restore(p);
            }
        }
        let Some((mut snap, log)) = loaded else {
            return Ok(None);
        };
        match (&mut self.map, &snap.paged) {
            (super::map::MapSlot::Paged(p), Some(part)) => {
                snap.l2p = p.load_base(&mut self.s, now, snap.logical, part)?;
            }
            // The map partition's blocks are another layout's data blocks: a volume is
            // mounted with the map store it was formatted with.
            (super::map::MapSlot::Paged(_), None) => {
                return Err(FtlError::Config(
                    "the volume keeps its map in RAM: mount it with map_cache_pages = 0".into(),
                ))
            }
            (_, Some(_)) => {
                return Err(FtlError::Config(
                    "the volume's map is demand-paged: mount it with map_cache_pages > 0".into(),
                ))
            }
            _ => {}
        }
        Ok(Some((snap, decode_trims(&log))))
    }

    /// Whether logical page entry `p` of a snapshot maps somewhere valid.
    pub(crate) fn snapshot_entry_ok(&self, p: u32) -> bool {
        p == INVALID || p == super::LOST || (p as u64) < self.s.geo().total_pages()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::rand_core::{RngCore, SeedableRng};

    /// Runs by a bit-at-a-time scan (the reference the word-stepping `runs` must match).
    fn naive_runs(bits: &[u64], n: u64) -> Vec<(u32, u32)> {
        let mut out = Vec::new();
        let mut start = None;
        for i in 0..n {
            let set = bits[(i / 64) as usize] >> (i % 64) & 1 == 1;
            match (set, start) {
                (true, None) => start = Some(i),
                (false, Some(a)) => {
                    out.push((a as u32, (i - a) as u32));
                    start = None;
                }
                _ => {}
            }
        }
        if let Some(a) = start {
            out.push((a as u32, (n - a) as u32));
        }
        out
    }

    #[test]
    fn runs_match_a_bit_scan() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        for case in 0..400u64 {
            let n = rng.next_u64() % 700;
            let words = n.div_ceil(64) as usize;
            // Whole zero / whole set words, sparse and dense words, mixed.
            let mut bits: Vec<u64> = (0..words)
                .map(|_| match rng.next_u32() % 4 {
                    0 => 0,
                    1 => u64::MAX,
                    2 => rng.next_u64(),
                    _ => 1 << (rng.next_u32() % 64),
                })
                .collect();
            if n % 64 != 0 {
                bits[words - 1] &= (1u64 << (n % 64)) - 1;
            }
            assert_eq!(runs(&bits, n), naive_runs(&bits, n), "case {case}, n {n}");
        }
    }

    #[test]
    fn snapshot_round_trips() {
        let crc = controller::layout::crc32c_software;
        let logical = 300u64;
        let mut critical = vec![0u64; 5];
        critical[0] = u64::MAX;
        critical[2] = 0b1011;
        let snap = Snapshot {
            seq: 99,
            logical,
            frontiers: vec![[(3, 7), (NO_BLOCK, 0)], [(5, 0), (6, 2)]],
            states: vec![code::FREE, code::OPEN, code::FULL, code::REGION],
            erase: vec![1, 2, 3, 4],
            l2p: (0..logical as u32)
                .map(|i| i.wrapping_mul(2654435761))
                .collect(),
            paged: None,
            slc: vec![false, true, false, false],
            critical,
            replicas: super::super::replica::Replicas::new(),
            policy: Some(vec![1, 2, 3]),
        };
        let bytes = snap.encode(crc);
        assert_eq!(Snapshot::decode(&bytes, 2, 4, crc), Some(snap.clone()));
        // One flipped byte fails the CRC.
        let mut bad = bytes.clone();
        bad[20] ^= 1;
        assert_eq!(Snapshot::decode(&bad, 2, 4, crc), None);
        // A paged map's section in place of the map: 300 pages in TPs of 128 entries.
        let paged = Snapshot {
            l2p: Vec::new(),
            paged: Some(super::super::paged::PagedPart {
                per_tp: 128,
                gtd: vec![4, u32::MAX, 9],
                lid: vec![u32::MAX, 2, u32::MAX],
                dirty: vec![(1, (0..128).collect()), (2, vec![7; 44])],
            }),
            ..snap.clone()
        };
        let bytes = paged.encode(crc);
        assert_eq!(Snapshot::decode(&bytes, 2, 4, crc), Some(paged.clone()));
        // A dirty TP past the volume, or of the wrong length, is refused.
        let mut wrong = paged.clone();
        wrong.paged.as_mut().unwrap().dirty[1].1.push(1);
        assert_eq!(Snapshot::decode(&wrong.encode(crc), 2, 4, crc), None);
        // A log directory is empty or one entry per TP.
        let mut nolog = paged.clone();
        nolog.paged.as_mut().unwrap().lid.clear();
        assert_eq!(
            Snapshot::decode(&nolog.encode(crc), 2, 4, crc),
            Some(nolog.clone())
        );
        nolog.paged.as_mut().unwrap().lid.push(0);
        assert_eq!(Snapshot::decode(&nolog.encode(crc), 2, 4, crc), None);

        // The header word: the volume size in 48 bits, the flags (paged) at byte 14, the
        // format version at byte 15.
        let reseal = |mut b: Vec<u8>| {
            let n = b.len() - 4;
            let c = crc(&b[..n]);
            b[n..].copy_from_slice(&c.to_le_bytes());
            b
        };
        let plain = snap.encode(crc);
        assert_eq!((plain[14], plain[15]), (0, FORMAT_VERSION));
        assert_eq!(stream_version(&plain, crc), Some(FORMAT_VERSION));
        assert_eq!(paged.encode(crc)[14], FLAG_PAGED);
        // Version 0 (before the byte existed): 63-bit size, paged flag in bit 63.
        let mut v0 = plain.clone();
        v0[14] = 0;
        v0[15] = 0;
        let v0 = reseal(v0);
        assert_eq!(stream_version(&v0, crc), Some(0));
        assert_eq!(Snapshot::decode(&v0, 2, 4, crc), Some(snap.clone()));
        let mut v0p = paged.encode(crc);
        v0p[14] = 0;
        v0p[15] = 0x80;
        assert_eq!(
            Snapshot::decode(&reseal(v0p), 2, 4, crc),
            Some(paged.clone())
        );
        // A newer version, or unknown flags, is not parsed; the version is reported.
        let mut v2 = plain.clone();
        v2[15] = FORMAT_VERSION + 1;
        let v2 = reseal(v2);
        assert_eq!(stream_version(&v2, crc), Some(FORMAT_VERSION + 1));
        assert_eq!(Snapshot::decode(&v2, 2, 4, crc), None);
        let mut flags = plain.clone();
        flags[14] = 2;
        assert_eq!(Snapshot::decode(&reseal(flags), 2, 4, crc), None);
    }
}
