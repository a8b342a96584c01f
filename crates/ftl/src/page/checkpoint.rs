//! The checkpoint region: persistent snapshots of the page-level FTL's state and the trim log.
//!
//! **Region.** The first `region_blocks_per_die` blocks of every die are reserved (state
//! [`BState::Region`]) and, on multi-level chips, put in SLC mode: a checkpoint page is then
//! never exposed to paired-page corruption and never shares a word line with user data.
//! Region blocks are used in a fixed interleaved order (block 0 of every die, then block 1,
//! …), so checkpoint pages are spread over the dies and read back in parallel.
//!
//! **Generations.** A checkpoint is a byte stream (a [`Snapshot`]) cut into pages, each
//! with a 32-byte header: magic, version, kind (body or trim log), generation, page index
//! within the generation, body page count, payload length. A new generation is written
//! only into region blocks that do not hold the committed one, so a torn checkpoint leaves
//! the previous generation intact; recovery takes the newest generation whose body is
//! complete and whose stream CRC matches (every page is also protected by the controller's
//! BCH code and data CRC).
//!
//! **Trim log.** Trims are volatile until persisted: on `flush`, and before any erase (an
//! erase may destroy the only stale copy a lost trim would resurrect), pending trims are
//! appended as trim-log pages after the committed generation's body, each entry carrying
//! the trim's sequence number so recovery orders it against data pages. When the region
//! has no room for another trim-log page a new checkpoint is written instead.

use super::{BState, PageFtl, COLD, HOST, INVALID};
use crate::{Cause, FtlError, OpKind};
use alloc::vec;
use alloc::vec::Vec;
use controller::{CtlError, MetaTag, OobRecord, PageKind, PageRead};
use nand::{ErrorModel, NandError, Nanos, Storage};

/// Page kind of checkpoint pages in the OOB record.
pub(crate) const CP_KIND: MetaTag = MetaTag::new(1);
/// Page kind of padding pages (sealing an MLC block's exposed lower pages).
pub(crate) const PAD_KIND: MetaTag = MetaTag::new(2);

const MAGIC: [u8; 4] = *b"NLCP";
const VERSION: u8 = 1;
/// Header bytes at the start of every checkpoint page.
pub(crate) const HEADER: usize = 32;
const KIND_BODY: u8 = 0;
const KIND_TRIMS: u8 = 1;
/// Bytes of one trim-log entry: logical page (u32) and sequence number (u64).
const TRIM_ENTRY: usize = 12;
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
    /// The logical-to-physical map.
    pub l2p: Vec<u32>,
}

impl Snapshot {
    /// Serialises the snapshot, ending with a CRC32C of everything before it.
    pub fn encode(&self, crc: fn(&[u8]) -> u32) -> Vec<u8> {
        let mut out = Vec::with_capacity(
            32 + self.frontiers.len() * 16 + self.states.len() + self.l2p.len() * 4,
        );
        out.extend_from_slice(&self.seq.to_le_bytes());
        out.extend_from_slice(&self.logical.to_le_bytes());
        out.extend_from_slice(&(self.frontiers.len() as u32).to_le_bytes());
        out.extend_from_slice(&(self.states.len() as u32).to_le_bytes());
        for f in &self.frontiers {
            for (b, n) in f {
                out.extend_from_slice(&b.to_le_bytes());
                out.extend_from_slice(&n.to_le_bytes());
            }
        }
        out.extend_from_slice(&self.states);
        for e in &self.erase {
            out.extend_from_slice(&e.to_le_bytes());
        }
        for p in &self.l2p {
            out.extend_from_slice(&p.to_le_bytes());
        }
        let c = crc(&out);
        out.extend_from_slice(&c.to_le_bytes());
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
        let logical = r.u64()?;
        if r.u32()? as usize != dies || r.u32()? as usize != blocks {
            return None;
        }
        let mut frontiers = Vec::with_capacity(dies);
        for _ in 0..dies {
            frontiers.push([(r.u32()?, r.u32()?), (r.u32()?, r.u32()?)]);
        }
        let states = r.take(blocks)?.to_vec();
        let mut erase = Vec::with_capacity(blocks);
        for _ in 0..blocks {
            erase.push(r.u32()?);
        }
        let rest = r.0;
        if rest.len() as u64 != logical.checked_mul(4)? {
            return None;
        }
        let l2p = rest
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        Some(Snapshot {
            seq,
            logical,
            frontiers,
            states,
            erase,
            l2p,
        })
    }
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Some(a)
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
}

/// The header of a checkpoint page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PageHeader {
    pub trims: bool,
    pub gen: u64,
    pub index: u32,
    pub body_pages: u32,
    pub len: u32,
}

impl PageHeader {
    fn write(&self, page: &mut [u8]) {
        page[..4].copy_from_slice(&MAGIC);
        page[4] = VERSION;
        page[5] = if self.trims { KIND_TRIMS } else { KIND_BODY };
        page[6..8].fill(0);
        page[8..16].copy_from_slice(&self.gen.to_le_bytes());
        page[16..20].copy_from_slice(&self.index.to_le_bytes());
        page[20..24].copy_from_slice(&self.body_pages.to_le_bytes());
        page[24..28].copy_from_slice(&self.len.to_le_bytes());
        page[28..32].fill(0);
    }

    /// Parses a page's header; `None` if it is not a checkpoint page of this version.
    pub fn read(page: &[u8]) -> Option<Self> {
        if page.len() < HEADER || page[..4] != MAGIC || page[4] != VERSION {
            return None;
        }
        let kind = page[5];
        if kind > KIND_TRIMS {
            return None;
        }
        let u32_at = |o: usize| u32::from_le_bytes(page[o..o + 4].try_into().expect("4 bytes"));
        let h = PageHeader {
            trims: kind == KIND_TRIMS,
            gen: u64::from_le_bytes(page[8..16].try_into().expect("8 bytes")),
            index: u32_at(16),
            body_pages: u32_at(20),
            len: u32_at(24),
        };
        (h.len as usize <= page.len() - HEADER).then_some(h)
    }
}

/// Trim-log entries packed in a page payload.
pub(crate) fn decode_trims(payload: &[u8]) -> impl Iterator<Item = (u32, u64)> + '_ {
    payload.chunks_exact(TRIM_ENTRY).map(|e| {
        (
            u32::from_le_bytes(e[..4].try_into().expect("4 bytes")),
            u64::from_le_bytes(e[4..12].try_into().expect("8 bytes")),
        )
    })
}

/// A loaded checkpoint: its snapshot and its trim log (logical page, sequence number).
pub(crate) type Loaded = (Snapshot, Vec<(u32, u64)>);

/// The committed checkpoint generation and where its log continues.
#[derive(Debug, Clone, Default)]
pub(crate) struct CpState {
    /// Generation number (0: none yet).
    pub gen: u64,
    /// Region blocks holding this generation, in page order.
    pub blocks: Vec<u32>,
    /// Pages used in the last of `blocks` (region page slots).
    pub used: u32,
    /// Pages of the generation so far (body and trim log).
    pub pages: u32,
    /// Body pages.
    pub body_pages: u32,
}

impl<S: Storage, M: ErrorModel> PageFtl<S, M> {
    /// Payload bytes of a checkpoint page.
    fn cp_payload(&self) -> usize {
        self.geo.page_size as usize - HEADER
    }

    /// The current state as a snapshot (frontier blocks are recorded as open; blocks being
    /// collected or waiting for their erase as full).
    pub(crate) fn snapshot(&self) -> Snapshot {
        let frontiers = self
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
        let states = self
            .state
            .iter()
            .map(|s| match s {
                BState::Free => code::FREE,
                BState::Open => code::OPEN,
                BState::Full | BState::Collecting | BState::Dirty => code::FULL,
                BState::Retiring => code::RETIRING,
                BState::Bad => code::BAD,
                BState::Region => code::REGION,
            })
            .collect();
        Snapshot {
            seq: self.seq,
            logical: self.logical,
            frontiers,
            states,
            erase: self.erase.clone(),
            l2p: self.l2p.clone(),
        }
    }

    /// Region blocks in the order a new generation uses them: after the committed
    /// generation's last block, skipping its blocks and bad ones.
    fn region_order(&self) -> Vec<u32> {
        let n = self.region.len();
        let start = self
            .cp
            .blocks
            .last()
            .and_then(|b| self.region.iter().position(|r| r == b))
            .map_or(0, |i| i + 1);
        (0..n)
            .map(|k| self.region[(start + k) % n])
            .filter(|b| !self.cp.blocks.contains(b) && self.state[*b as usize] == BState::Region)
            .collect()
    }

    /// Erases region block `b` for a new use; `false` if it went bad.
    fn prepare_region_block(&mut self, now: Nanos, b: u32) -> Result<bool, FtlError> {
        let addr = self.block_addr(b);
        match self.ctl.chip_mut().erase(now, addr) {
            Ok(t) => {
                self.push_erase(b, Cause::Meta, t);
                self.erase[b as usize] += 1;
                Ok(true)
            }
            Err(NandError::EraseFailed(_)) => {
                self.state[b as usize] = BState::Bad;
                self.counters.retired_blocks += 1;
                Ok(false)
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Programs one checkpoint page at slot `slot` of region block `b`. `Ok(false)`: the
    /// program failed and the block is retired.
    fn program_cp_page(
        &mut self,
        now: Nanos,
        b: u32,
        slot: u32,
        page: &[u8],
        h: &PageHeader,
    ) -> Result<bool, FtlError> {
        let addr = self
            .block_addr(b)
            .page(self.region_pages[slot as usize])
            .expect("region page in block");
        let rec = OobRecord::new(h.gen, h.index as u64, PageKind::Meta(CP_KIND));
        match self.ctl.program_meta(now, addr, page, rec, self.cfg.ecc_t) {
            Ok(t) => {
                self.push_op(b, OpKind::Program, Cause::Meta, t, Nanos::ZERO, None);
                self.counters.meta_bytes += page.len() as u64;
                Ok(true)
            }
            Err(CtlError::Nand(NandError::ProgramFailed(_))) => {
                self.counters.program_retries += 1;
                self.state[b as usize] = BState::Bad;
                self.counters.retired_blocks += 1;
                Ok(false)
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Writes a new checkpoint generation (sealing every frontier first, so nothing the
    /// snapshot maps can later be damaged by a paired-page program). Pending trims are
    /// part of the snapshot and are dropped.
    pub(crate) fn write_checkpoint(&mut self, now: Nanos) -> Result<(), FtlError> {
        self.seal_all(now)?;
        let crc = self.ctl.crc32c_fn();
        let bytes = self.snapshot().encode(crc);
        let payload = self.cp_payload();
        let body_pages = bytes.len().div_ceil(payload) as u32;
        let gen = self.cp.gen + 1;
        let slots = self.region_pages.len() as u32;
        let mut order = self.region_order().into_iter();
        let mut blocks: Vec<u32> = Vec::new();
        let mut used = slots; // forces a block on the first page
        let mut page = vec![0u8; self.geo.page_size as usize];
        let mut index = 0u32;
        while index < body_pages {
            if used == slots {
                let Some(b) = order.next() else {
                    // Too many region blocks went bad for another generation.
                    return Err(FtlError::NoSpace);
                };
                if !self.prepare_region_block(now, b)? {
                    continue;
                }
                blocks.push(b);
                used = 0;
            }
            let chunk =
                &bytes[index as usize * payload..((index as usize + 1) * payload).min(bytes.len())];
            let h = PageHeader {
                trims: false,
                gen,
                index,
                body_pages,
                len: chunk.len() as u32,
            };
            page.fill(0);
            h.write(&mut page);
            page[HEADER..HEADER + chunk.len()].copy_from_slice(chunk);
            let b = *blocks.last().expect("a block is open");
            if self.program_cp_page(now, b, used, &page, &h)? {
                used += 1;
                index += 1;
            } else {
                // Retired mid-write: continue in the next region block.
                used = slots;
            }
        }
        self.cp = CpState {
            gen,
            blocks,
            used,
            pages: body_pages,
            body_pages,
        };
        self.pending_trims.clear();
        self.opened_since_cp = 0;
        // Blocks written after this checkpoint are young: the open frontiers (their pages
        // from `next` on) and every block opened from now on.
        self.young.fill(false);
        for d in 0..self.dies.len() {
            for f in self.dies[d].frontier.into_iter().flatten() {
                self.young[f.block as usize] = true;
            }
        }
        self.counters.checkpoints += 1;
        Ok(())
    }

    /// Appends pending trims to the committed generation's trim log (or writes a new
    /// checkpoint when the region has no room).
    pub(crate) fn persist_trims(&mut self, now: Nanos) -> Result<(), FtlError> {
        if self.pending_trims.is_empty() {
            return Ok(());
        }
        let per_page = self.cp_payload() / TRIM_ENTRY;
        let slots = self.region_pages.len() as u32;
        let mut page = vec![0u8; self.geo.page_size as usize];
        let mut done = 0;
        while done < self.pending_trims.len() {
            if self.cp.used == slots {
                // Grow the log only while a whole new generation still fits beside it.
                let order = self.region_order();
                let body_blocks = self.cp.body_pages.div_ceil(slots) as usize;
                if order.len() <= body_blocks {
                    return self.write_checkpoint(now);
                }
                let b = order[0];
                if !self.prepare_region_block(now, b)? {
                    continue;
                }
                self.cp.blocks.push(b);
                self.cp.used = 0;
            }
            let n = per_page.min(self.pending_trims.len() - done);
            let h = PageHeader {
                trims: true,
                gen: self.cp.gen,
                index: self.cp.pages,
                body_pages: self.cp.body_pages,
                len: (n * TRIM_ENTRY) as u32,
            };
            page.fill(0);
            h.write(&mut page);
            for (k, &(lpn, seq)) in self.pending_trims[done..done + n].iter().enumerate() {
                let o = HEADER + k * TRIM_ENTRY;
                page[o..o + 4].copy_from_slice(&lpn.to_le_bytes());
                page[o + 4..o + 12].copy_from_slice(&seq.to_le_bytes());
            }
            let b = *self.cp.blocks.last().expect("generation has a block");
            if self.program_cp_page(now, b, self.cp.used, &page, &h)? {
                self.cp.used += 1;
                self.cp.pages += 1;
                done += n;
            } else {
                self.cp.used = slots;
            }
        }
        self.pending_trims.clear();
        Ok(())
    }

    /// Reads the newest complete checkpoint generation from the region: its snapshot, its
    /// trim log, and the log's position. `None` if the region holds no valid checkpoint.
    pub(crate) fn load_checkpoint(&mut self, now: Nanos) -> Result<Option<Loaded>, FtlError> {
        let mut page = vec![0u8; self.geo.page_size as usize];
        // The first page of every region block: which generation and page it starts with.
        let mut starts: Vec<(u64, u32, u32)> = Vec::new();
        for i in 0..self.region.len() {
            let b = self.region[i];
            if self.state[b as usize] == BState::Bad {
                continue;
            }
            if let Some(h) = self.read_cp_page(now, b, 0, &mut page)? {
                starts.push((h.gen, h.index, b));
            }
        }
        let mut gens: Vec<u64> = starts.iter().map(|s| s.0).collect();
        gens.sort_unstable_by(|a, b| b.cmp(a));
        gens.dedup();
        let slots = self.region_pages.len() as u32;
        let crc = self.ctl.crc32c_fn();
        for gen in gens {
            let mut blocks: Vec<(u32, u32)> = starts
                .iter()
                .filter(|s| s.0 == gen)
                .map(|s| (s.1, s.2))
                .collect();
            blocks.sort_unstable();
            let mut body: Vec<u8> = Vec::new();
            let mut trims: Vec<(u32, u64)> = Vec::new();
            let mut expect = 0u32;
            let mut body_pages = None;
            let mut last = (0u32, 0u32);
            let mut order = Vec::new();
            'blocks: for &(first, b) in &blocks {
                if first != expect {
                    break;
                }
                order.push(b);
                for slot in 0..slots {
                    let Some(h) = self.read_cp_page(now, b, slot, &mut page)? else {
                        break;
                    };
                    if h.gen != gen || h.index != expect {
                        break;
                    }
                    let bp = *body_pages.get_or_insert(h.body_pages);
                    if h.body_pages != bp || h.trims != (h.index >= bp) {
                        break 'blocks;
                    }
                    let data = &page[HEADER..HEADER + h.len as usize];
                    if h.trims {
                        trims.extend(decode_trims(data));
                    } else {
                        body.extend_from_slice(data);
                    }
                    expect += 1;
                    last = (b, slot + 1);
                }
            }
            let Some(bp) = body_pages else { continue };
            if expect < bp {
                continue;
            }
            let ndies = self.dies.len();
            let nblocks = self.state.len();
            let Some(snap) = Snapshot::decode(&body, ndies, nblocks, crc) else {
                continue;
            };
            let used_blocks: Vec<u32> = order
                .iter()
                .copied()
                .take(order.iter().position(|&b| b == last.0).map_or(0, |i| i + 1))
                .collect();
            // The log continues in a fresh block: the slot after the last valid page may
            // hold a torn program that reads as erased.
            self.cp = CpState {
                gen,
                blocks: used_blocks,
                used: slots,
                pages: expect,
                body_pages: bp,
            };
            return Ok(Some((snap, trims)));
        }
        Ok(None)
    }

    /// Reads region page `slot` of block `b`; its header if it is a valid checkpoint page.
    fn read_cp_page(
        &mut self,
        now: Nanos,
        b: u32,
        slot: u32,
        page: &mut [u8],
    ) -> Result<Option<PageHeader>, FtlError> {
        let addr = self
            .block_addr(b)
            .page(self.region_pages[slot as usize])
            .expect("region page in block");
        match self.ctl.read_meta(now, addr, page) {
            Ok(PageRead::Data(info)) => {
                self.push_op(b, OpKind::Read, Cause::Mount, info.timing, info.ecc, None);
                if info.record.kind != PageKind::Meta(CP_KIND) {
                    return Ok(None);
                }
                Ok(PageHeader::read(page)
                    .filter(|h| h.gen == info.record.lpn && h.index as u64 == info.record.seq))
            }
            Ok(PageRead::Erased { timing }) => {
                self.push_op(b, OpKind::Read, Cause::Mount, timing, Nanos::ZERO, None);
                Ok(None)
            }
            Err(CtlError::Uncorrectable { .. }) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Whether logical page entry `p` of a snapshot maps somewhere valid.
    pub(crate) fn snapshot_entry_ok(&self, p: u32) -> bool {
        p == INVALID || p == super::LOST || (p as u64) < self.geo.total_pages()
    }
}
