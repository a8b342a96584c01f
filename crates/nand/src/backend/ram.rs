use super::{copy_through_buffer, SparePacker, Storage};
use crate::error::StorageError;
use crate::geometry::Geometry;
use alloc::boxed::Box;
use alloc::collections::BTreeMap;
use alloc::sync::Arc;
use alloc::vec;
use alloc::vec::Vec;
use strength_reduce::StrengthReducedU64;

/// Sparse RAM storage: a block's buffer is allocated on its first program and freed by its
/// erase, so memory grows with the blocks in use, never with the chip's size.
///
/// Spare areas live in those per-block buffers; data areas (whole-page mode) live in
/// reference-counted page frames, so that [`Storage::write_copy`] — a page
/// programmed with the data another page holds, as GC relocation does — shares the frame
/// instead of copying 4 KiB through memory. A frame is written in place only while one page
/// refers to it (copy on write), so sharing is invisible to every reader.
///
/// In digest mode ([`RamStorage::digest`], the payload mode of multi-GiB simulations) only
/// the first `keep` bytes of each page's spare area are kept; the data area reads back as
/// zeros and the rest of the spare as erased (0xFF). The chip's rules, timing and wear are
/// unchanged; callers identify page contents by records they keep in that spare prefix.
/// With a [`SparePacker`] ([`RamStorage::with_packer`]) each page's slot holds that
/// prefix's compact form instead.
#[derive(Debug, Clone)]
pub struct RamStorage {
    page_size: usize,
    /// Spare bytes kept per page in the block buffers: the whole spare area, or a prefix of
    /// it in digest mode.
    kept: usize,
    /// Bytes of a page's slot: `kept`, or the packer's compact form of them.
    slot_len: usize,
    /// Distance between two pages' slots in a block buffer ([`stride`]).
    stride: usize,
    /// The compact form of the kept bytes, if any.
    packer: Option<Arc<dyn SparePacker>>,
    /// Kept bytes without a compact form, by flat page index (their slot is all 0xFF).
    verbatim: BTreeMap<u64, Box<[u8]>>,
    /// The data areas (whole-page mode); `None` in digest mode, where they read as zeros.
    frames: Option<Frames>,
    pages_per_block: u64,
    /// `pages_per_block` as a multiply-shift divisor (every access splits a flat page index).
    ppb_div: StrengthReducedU64,
    blocks: Vec<Option<SlotBuf>>,
    /// Pages written per block since its erase (for accounting).
    written: Vec<u32>,
    stored_pages: u64,
    /// Buffers of erased blocks kept for reuse (no allocator round trip, no page faults on
    /// the next program); at most [`POOL`] of them.
    pool: Vec<SlotBuf>,
    /// Blocks kept whole in digest mode (an FTL's metadata region), with their storage.
    full: Option<(Vec<bool>, Box<RamStorage>)>,
}

/// Longest compact form a [`SparePacker`] may use.
const MAX_PACKED: usize = 64;

/// Block buffers kept for reuse after erases.
const POOL: usize = 64;

/// A cache line: block buffers' slots start on its boundaries.
const LINE: usize = 64;

/// The slot size for `kept` bytes per page: the next power of two up to 32 bytes (two or
/// more slots to a cache line, none straddling two), then whole 16-byte units up to a line,
/// whole lines beyond.
///
/// The middle range is FLARES's: a 45-byte prefix (record and PPROF codeword) takes 48, not
/// 64. A random read then touches two lines for half the pages (the prefetch hints cover a
/// slot's first and last byte), but every stream of in-order programs and GC reads moves
/// three quarters of the bytes a 64-byte slot would. Measured with `nandlab bench`
/// (FLARES against fixed t, side by side): 48 beat 64 by about 1.5 points of the ratio.
/// A 45-byte stride would leave no slot aligned to anything.
fn stride(kept: usize) -> usize {
    if kept <= 32 {
        kept.next_power_of_two()
    } else if kept <= LINE {
        kept.div_ceil(16) * 16
    } else {
        kept.div_ceil(LINE) * LINE
    }
}

/// A block's slot buffer: allocated a cache line longer than its slots, which start at its
/// first line boundary (the allocator promises no more than 16-byte alignment).
#[derive(Debug)]
struct SlotBuf(Box<[u8]>);

impl SlotBuf {
    /// A buffer of `len` slot bytes (contents unspecified).
    fn new(len: usize) -> Self {
        SlotBuf(vec![0u8; len + LINE].into_boxed_slice())
    }

    /// Offset of the first line-aligned byte.
    #[inline]
    fn base(&self) -> usize {
        (LINE - (self.0.as_ptr() as usize) % LINE) % LINE
    }

    /// The slot bytes.
    #[inline]
    fn slots(&self) -> &[u8] {
        let b = self.base();
        &self.0[b..b + self.0.len() - LINE]
    }

    /// The slot bytes, writable.
    #[inline]
    fn slots_mut(&mut self) -> &mut [u8] {
        let b = self.base();
        let n = self.0.len() - LINE;
        &mut self.0[b..b + n]
    }
}

impl Clone for SlotBuf {
    /// The copy's slots start at its own line boundary, which may sit at another offset
    /// than the original's: the slot bytes are copied, not the raw buffer.
    fn clone(&self) -> Self {
        let mut c = SlotBuf::new(self.0.len() - LINE);
        c.slots_mut().copy_from_slice(self.slots());
        c
    }
}

impl RamStorage {
    /// Empty storage for a chip of `geometry`, keeping whole pages.
    pub fn new(geometry: &Geometry) -> Self {
        RamStorage {
            frames: Some(Frames::new(geometry)),
            ..RamStorage::digest(geometry, geometry.spare_size as usize)
        }
    }

    /// Digest-mode storage keeping only the first `keep` spare bytes of each page.
    pub fn digest(geometry: &Geometry, keep: usize) -> Self {
        let kept = keep.min(geometry.spare_size as usize);
        RamStorage {
            page_size: geometry.page_size as usize,
            kept,
            slot_len: kept,
            stride: stride(kept),
            packer: None,
            verbatim: BTreeMap::new(),
            frames: None,
            pages_per_block: geometry.pages_per_block as u64,
            ppb_div: StrengthReducedU64::new(geometry.pages_per_block as u64),
            blocks: vec![None; geometry.total_blocks() as usize],
            written: vec![0; geometry.total_blocks() as usize],
            stored_pages: 0,
            pool: Vec::new(),
            full: None,
        }
    }

    /// Keeps whole pages (data and spare) of the blocks whose flat index is set in `mask`,
    /// whatever the mode: in digest mode an FTL's metadata region (checkpoints) must hold
    /// real bytes while user data keeps only its spare prefix.
    pub fn with_full_blocks(mut self, geometry: &Geometry, mask: Vec<bool>) -> Self {
        if self.frames.is_none() {
            // Its frame index holds the pages it stores only (the kept blocks are few, and
            // they may sit anywhere on the chip: an index up to the highest would cost 4
            // bytes per page of a huge chip).
            let mut whole = RamStorage::new(geometry);
            if let Some(f) = whole.frames.as_mut() {
                f.of = FrameIndex::Sparse(BTreeMap::new());
                // A few blocks' pages: chunks of one huge page, not thousands of frames
                // allocated (and copied with the store) for a handful written.
                f.chunk = (WHOLE_CHUNK_BYTES / f.page_size.max(1)).clamp(1, CHUNK);
            }
            self.full = Some((mask, Box::new(whole)));
        }
        self
    }

    /// Keeps each page's spare prefix in `packer`'s compact form (digest mode only, and
    /// only if the form is shorter; call it before anything is stored).
    pub fn with_packer(mut self, packer: Arc<dyn SparePacker>) -> Self {
        assert_eq!(self.stored_pages, 0, "a packer is set on an empty store");
        let n = packer.packed_len();
        if self.frames.is_none() && n < self.kept && n <= MAX_PACKED {
            self.slot_len = n;
            self.stride = stride(n);
            self.pool.clear();
            self.packer = Some(packer);
        }
        self
    }

    /// Pages whose kept bytes had no compact form (kept verbatim beside the slots).
    pub fn verbatim_pages(&self) -> usize {
        self.verbatim.len()
    }

    /// The whole-page store of `page`'s block, when that block is kept whole.
    fn full_of(&mut self, page: u64) -> Option<&mut RamStorage> {
        let (b, _) = self.split(page);
        self.full_at(b)
    }

    /// The whole-page store of block `b` (flat index), when that block is kept whole.
    #[inline]
    fn full_at(&mut self, b: usize) -> Option<&mut RamStorage> {
        match &mut self.full {
            Some((mask, st)) if mask.get(b).copied().unwrap_or(false) => Some(st),
            _ => None,
        }
    }

    /// Digest-mode storage keeping the whole spare area.
    pub fn spare_only(geometry: &Geometry) -> Self {
        RamStorage::digest(geometry, geometry.spare_size as usize)
    }

    /// Pages currently holding data.
    pub fn stored_pages(&self) -> u64 {
        self.stored_pages
    }

    /// Bytes of page content currently held for written pages (a page's data area counted
    /// whole even when it shares its frame).
    pub fn stored_bytes(&self) -> u64 {
        self.stored_pages * self.kept_per_page() as u64
    }

    /// Bytes one block in use allocates for its pages' kept spare bytes: a slot per page
    /// (the kept bytes rounded up to their stride) and a cache line for alignment.
    pub fn block_bytes(&self) -> u64 {
        self.pages_per_block * self.stride as u64 + LINE as u64
    }

    /// Bytes allocated for page content: spare buffers of the blocks in use
    /// ([`block_bytes`](RamStorage::block_bytes) each; pooled buffers of erased blocks not
    /// counted) and data frames in use.
    pub fn allocated_bytes(&self) -> u64 {
        self.blocks.iter().filter(|b| b.is_some()).count() as u64 * self.block_bytes()
            + self
                .frames
                .as_ref()
                .map_or(0, |f| f.in_use() * self.page_size as u64)
    }

    /// Bytes a written page holds: its data area (whole-page mode) and its kept spare.
    fn kept_per_page(&self) -> usize {
        self.slot_len + self.frames.as_ref().map_or(0, |_| self.page_size)
    }

    fn split(&self, page: u64) -> (usize, usize) {
        let (b, p) = StrengthReducedU64::div_rem(page, self.ppb_div);
        (b as usize, p as usize)
    }

    /// The kept spare bytes of page `p` of block `b`, its buffer allocated if need be.
    fn slot(&mut self, (b, p): (usize, usize)) -> &mut [u8] {
        let size = self.pages_per_block as usize * self.stride;
        let pool = &mut self.pool;
        // A reused buffer holds stale bytes; the chip never reads a page it has not
        // written since the erase (the Storage contract), so they are never seen.
        let blk =
            self.blocks[b].get_or_insert_with(|| pool.pop().unwrap_or_else(|| SlotBuf::new(size)));
        let at = p * self.stride;
        &mut blk.slots_mut()[at..at + self.slot_len]
    }

    fn count(&mut self, b: usize) {
        self.written[b] += 1;
        self.stored_pages += 1;
    }
}

impl RamStorage {
    /// The slot of page `p` of block `b` (`None` if the block holds nothing).
    fn stored(&self, (b, p): (usize, usize)) -> Option<&[u8]> {
        self.blocks[b]
            .as_ref()
            .map(|blk| &blk.slots()[p * self.stride..p * self.stride + self.slot_len])
    }

    /// The spare area of page `p` of block `b` as read back from its kept bytes; false (and
    /// nothing written) if the block holds nothing.
    fn load_spare(&self, (b, p): (usize, usize), spare: &mut [u8]) -> bool {
        let Some(src) = self.stored((b, p)) else {
            return false;
        };
        let kept = &mut spare[..self.kept];
        match &self.packer {
            None => kept.copy_from_slice(src),
            Some(_) if src.iter().all(|&x| x == 0xFF) => {
                // (No entry: a page not written since the erase, whose slot holds a reused
                // buffer's stale bytes. The chip never reads one; it reads as erased.)
                let pi = b as u64 * self.pages_per_block + p as u64;
                match self.verbatim.get(&pi) {
                    Some(v) => kept.copy_from_slice(v),
                    None => kept.fill(0xFF),
                }
            }
            Some(pk) => pk.unpack(src, kept),
        }
        spare[self.kept..].fill(0xFF);
        true
    }

    /// Stores the spare area of page `p` of block `b` (its kept prefix).
    fn put_spare(&mut self, at: (usize, usize), spare: &[u8]) {
        let kept = &spare[..self.kept];
        match &self.packer {
            None => self.slot(at).copy_from_slice(kept),
            Some(pk) => {
                let mut packed = [0u8; MAX_PACKED];
                let packed = &mut packed[..self.slot_len];
                let pi = at.0 as u64 * self.pages_per_block + at.1 as u64;
                if pk.pack(kept, packed) {
                    debug_assert!(
                        packed.iter().any(|&x| x != 0xFF),
                        "a compact form is all 0xFF"
                    );
                    self.slot(at).copy_from_slice(packed);
                    if !self.verbatim.is_empty() {
                        self.verbatim.remove(&pi);
                    }
                } else {
                    self.verbatim.insert(pi, kept.into());
                    self.slot(at).fill(0xFF);
                }
            }
        }
        // A block's pages are programmed in order (the chip's rule), so its next program
        // writes the next slot. Dozens of blocks fill at once, too many streams for the
        // CPU's own prefetcher: without the hint, every program whose slot starts a new
        // cache line waits for that line (measured: 5 points of `nandlab bench`'s
        // FLARES/fixed ratio, whose FLARES slots are larger).
        self.prefetch_slot(at.0, at.1 + 1);
    }

    /// Hints the CPU to load the kept bytes of page `p` of block `b`: the lines of its
    /// slot's first and last byte (a slot may end on the next line: see [`stride`]).
    /// Nothing for a block without a buffer or a page past its end.
    #[inline]
    fn prefetch_slot(&self, b: usize, p: usize) {
        if let Some(Some(blk)) = self.blocks.get(b) {
            let at = p * self.stride;
            crate::hint::prefetch(blk.slots(), at);
            crate::hint::prefetch(blk.slots(), at + self.slot_len.saturating_sub(1));
        }
    }
}

impl Storage for RamStorage {
    fn read(&mut self, page: u64, buf: &mut [u8]) -> Result<(), StorageError> {
        let (data, spare) = buf.split_at_mut(self.page_size);
        self.read_split(page, data, spare)
    }

    fn read_split(
        &mut self,
        page: u64,
        data: &mut [u8],
        spare: &mut [u8],
    ) -> Result<(), StorageError> {
        let at = self.split(page);
        if let Some(f) = self.full_at(at.0) {
            return f.read_split(page, data, spare);
        }
        if !self.load_spare(at, spare) {
            data.fill(0xFF);
            spare.fill(0xFF);
            return Ok(());
        }
        match &self.frames {
            Some(f) => f.read(page, data),
            None => data.fill(0),
        }
        Ok(())
    }

    fn read_spare(
        &mut self,
        page: u64,
        _page_size: usize,
        spare: &mut [u8],
    ) -> Result<(), StorageError> {
        let at = self.split(page);
        if let Some(f) = self.full_at(at.0) {
            return f.read_spare(page, _page_size, spare);
        }
        if !self.load_spare(at, spare) {
            spare.fill(0xFF);
        }
        Ok(())
    }

    fn write(&mut self, page: u64, image: &[u8]) -> Result<(), StorageError> {
        if let Some(f) = self.full_of(page) {
            return f.write(page, image);
        }
        let (data, spare) = image.split_at(self.page_size);
        self.write_split(page, data, spare)
    }

    fn write_split(&mut self, page: u64, data: &[u8], spare: &[u8]) -> Result<(), StorageError> {
        let at = self.split(page);
        if let Some(f) = self.full_at(at.0) {
            return f.write_split(page, data, spare);
        }
        self.put_spare(at, spare);
        if let Some(f) = &mut self.frames {
            f.write(page, data);
        }
        self.count(at.0);
        Ok(())
    }

    fn write_copy(
        &mut self,
        page: u64,
        from: u64,
        page_size: usize,
        spare: &[u8],
    ) -> Result<(), StorageError> {
        let at = self.split(page);
        if self.full_at(at.0).is_some() || self.full_of(from).is_some() {
            // (Blocks kept whole in digest mode hold metadata, never relocated data.)
            return copy_through_buffer(self, page, from, page_size, spare);
        }
        self.put_spare(at, spare);
        if let Some(f) = &mut self.frames {
            f.share(page, from);
        }
        self.count(at.0);
        Ok(())
    }

    fn prefetch(&self, page: u64) {
        let (b, p) = self.split(page);
        self.prefetch_slot(b, p);
        if let Some(f) = &self.frames {
            if let FrameIndex::Dense(of) = &f.of {
                crate::hint::prefetch(of, page as usize);
            }
        }
    }

    fn prefetch_data(&self, page: u64) {
        if let Some(f) = &self.frames {
            let n = f.frame_of(page);
            if n != NONE {
                crate::hint::prefetch_lines(f.bytes(n));
            }
        }
    }

    fn keep_whole(&mut self, block: u32, keep: bool) {
        // Only a store made with whole blocks (`with_full_blocks`) can move them; the
        // block is erased, so nothing stored moves with it.
        if let Some((mask, _)) = &mut self.full {
            if let Some(m) = mask.get_mut(block as usize) {
                *m = keep;
            }
        }
    }

    fn discard(&mut self, first: u64, count: u32) -> Result<(), StorageError> {
        if let Some(f) = self.full_of(first) {
            return f.discard(first, count);
        }
        let (b, _) = self.split(first);
        if let Some(f) = &mut self.frames {
            for p in first..first + count as u64 {
                f.release(p);
            }
        }
        if let Some(buf) = self.blocks[b].take() {
            if self.pool.len() < POOL {
                self.pool.push(buf);
            }
        }
        self.stored_pages -= self.written[b] as u64;
        self.written[b] = 0;
        while let Some((&pi, _)) = self.verbatim.range(first..first + count as u64).next() {
            self.verbatim.remove(&pi);
        }
        Ok(())
    }
}

/// Reference-counted data frames: the data area of every written page of a whole-page
/// [`RamStorage`], shareable between pages that hold the same bytes.
#[derive(Debug)]
struct Frames {
    page_size: usize,
    /// Each page's frame.
    of: FrameIndex,
    /// Frame memory, `chunk` frames per allocation.
    chunks: Vec<Box<[u8]>>,
    /// Frames per allocation: [`CHUNK`], or fewer for a store that keeps a few blocks.
    chunk: usize,
    /// Pages referring to each frame.
    refs: Vec<u32>,
    /// Frames referred to by no page.
    free: Vec<u32>,
}

/// Which frame each page holds.
#[derive(Debug, Clone)]
enum FrameIndex {
    /// Per flat page index (`NONE` while the page holds no data): a whole-page chip.
    Dense(Vec<u32>),
    /// The pages that have a frame only: a store that keeps a few blocks of a large chip
    /// (a digest-mode chip's whole blocks, which may sit anywhere on it).
    Sparse(BTreeMap<u64, u32>),
}

/// No frame.
const NONE: u32 = u32::MAX;
/// Frames per chunk of frame memory: 8 MiB of 4 KiB pages, so that a host allocator
/// that backs large blocks with huge pages (the `nandlab` binary's does) can map the
/// frames, which are touched at random, with few TLB entries.
const CHUNK: usize = 2048;
/// Bytes per chunk of the whole-page store of a digest-mode chip's kept blocks (2 MiB).
const WHOLE_CHUNK_BYTES: usize = 2 << 20;

impl Clone for Frames {
    /// Copies the frames some page refers to; a free frame's bytes are never read before
    /// a write replaces them all (`own`, `share`), so they are left zero. A digest-mode
    /// chip keeps a few whole pages in a chunk of thousands of frames: a copy of it (a
    /// simulator's recovery measured on a copy) then copies those pages, not the chunk.
    fn clone(&self) -> Self {
        let mut chunks: Vec<Box<[u8]>> = self
            .chunks
            .iter()
            .map(|c| vec![0u8; c.len()].into_boxed_slice())
            .collect();
        for (f, &r) in self.refs.iter().enumerate() {
            if r > 0 {
                let (c, range) = self.locate(f as u32);
                chunks[c][range.clone()].copy_from_slice(&self.chunks[c][range]);
            }
        }
        Frames {
            page_size: self.page_size,
            of: self.of.clone(),
            chunks,
            chunk: self.chunk,
            refs: self.refs.clone(),
            free: self.free.clone(),
        }
    }
}

impl Frames {
    fn new(geometry: &Geometry) -> Self {
        Frames {
            page_size: geometry.page_size as usize,
            of: FrameIndex::Dense(vec![NONE; geometry.total_pages() as usize]),
            chunks: Vec::new(),
            chunk: CHUNK,
            refs: Vec::new(),
            free: Vec::new(),
        }
    }

    /// Frames referred to by some page.
    fn in_use(&self) -> u64 {
        (self.refs.len() - self.free.len()) as u64
    }

    /// Chunk and byte range of frame `f`.
    fn locate(&self, f: u32) -> (usize, core::ops::Range<usize>) {
        let i = f as usize % self.chunk;
        (
            f as usize / self.chunk,
            i * self.page_size..(i + 1) * self.page_size,
        )
    }

    fn bytes(&self, f: u32) -> &[u8] {
        let (c, r) = self.locate(f);
        &self.chunks[c][r]
    }

    fn bytes_mut(&mut self, f: u32) -> &mut [u8] {
        let (c, r) = self.locate(f);
        &mut self.chunks[c][r]
    }

    /// A frame no page refers to, with one reference taken.
    fn take(&mut self) -> u32 {
        let f = match self.free.pop() {
            Some(f) => f,
            None => {
                let first = self.refs.len() as u32;
                self.chunks
                    .push(vec![0u8; self.chunk * self.page_size].into_boxed_slice());
                self.refs.resize(self.refs.len() + self.chunk, 0);
                // Hand out the chunk's frames in ascending order.
                self.free
                    .extend((first + 1..first + self.chunk as u32).rev());
                first
            }
        };
        self.refs[f as usize] = 1;
        f
    }

    /// Points `page` at frame `f` (`NONE`: at none).
    #[inline]
    fn set(&mut self, page: u64, f: u32) {
        match &mut self.of {
            FrameIndex::Sparse(m) if f == NONE => {
                m.remove(&page);
            }
            FrameIndex::Sparse(m) => {
                m.insert(page, f);
            }
            FrameIndex::Dense(of) => of[page as usize] = f,
        }
    }

    /// `page`'s frame (`NONE`: none).
    #[inline]
    fn frame_of(&self, page: u64) -> u32 {
        match &self.of {
            FrameIndex::Sparse(m) => m.get(&page).copied().unwrap_or(NONE),
            FrameIndex::Dense(of) => of.get(page as usize).copied().unwrap_or(NONE),
        }
    }

    /// Drops `page`'s reference to its frame, if it has one.
    fn release(&mut self, page: u64) {
        let f = self.frame_of(page);
        if f != NONE {
            self.set(page, NONE);
            self.refs[f as usize] -= 1;
            if self.refs[f as usize] == 0 {
                self.free.push(f);
            }
        }
    }

    fn read(&self, page: u64, data: &mut [u8]) {
        match self.frame_of(page) {
            NONE => data.fill(0xFF),
            f => data.copy_from_slice(self.bytes(f)),
        }
    }

    /// `page`'s frame, for a write of all of it: in place when no other page shares it.
    fn own(&mut self, page: u64) -> u32 {
        let mut f = self.frame_of(page);
        if f == NONE || self.refs[f as usize] > 1 {
            self.release(page);
            f = self.take();
            self.set(page, f);
        }
        f
    }

    /// Stores `data` as `page`'s data area.
    fn write(&mut self, page: u64, data: &[u8]) {
        let f = self.own(page);
        stream_copy(self.bytes_mut(f), data);
    }

    /// Makes `page` hold the data area `from` holds (an unwritten `from` reads as erased).
    fn share(&mut self, page: u64, from: u64) {
        let f = self.frame_of(from);
        if f == NONE {
            let g = self.own(page);
            self.bytes_mut(g).fill(0xFF);
        } else {
            self.release(page);
            self.refs[f as usize] += 1;
            self.set(page, f);
        }
    }
}

/// `dst.copy_from_slice(src)` with non-temporal stores where the CPU has them: a frame just
/// programmed is not read again soon, and streaming stores skip reading its old cache lines
/// from memory first (a third of the memory traffic of a page program).
fn stream_copy(dst: &mut [u8], src: &[u8]) {
    assert_eq!(dst.len(), src.len(), "stream_copy of unequal lengths");
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_sfence, _mm_stream_si128};
        if (dst.as_ptr() as usize).is_multiple_of(16) && dst.len().is_multiple_of(16) {
            let n = dst.len() / 16;
            let d = dst.as_mut_ptr().cast::<__m128i>();
            let s = src.as_ptr().cast::<__m128i>();
            // SAFETY: SSE2 is part of x86_64; `d` is 16-byte aligned and both buffers hold
            // `n` 16-byte lanes (equal lengths, checked above); loads are unaligned.
            unsafe {
                for i in 0..n {
                    _mm_stream_si128(d.add(i), _mm_loadu_si128(s.add(i)));
                }
                // Order the streaming stores before any later access to the frame.
                _mm_sfence();
            }
            return;
        }
    }
    dst.copy_from_slice(src);
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;

    #[test]
    fn slots_are_line_aligned_and_survive_clones() {
        let g = crate::ChipConfig::preset("tiny-slc").unwrap().geometry;
        let spare_size = g.spare_size as usize;
        let ppb = g.pages_per_block as u64;
        // 45 kept bytes: slots of 48; 32: two to a line; more than a line: whole lines.
        assert_eq!(stride(32), 32);
        assert_eq!(stride(33), 48);
        assert_eq!(stride(64), 64);
        assert_eq!(stride(100), 128);
        let mut st = RamStorage::digest(&g, 45);
        assert_eq!(st.stride, 48);
        let spare_of = |page: u64| -> Vec<u8> {
            (0..spare_size)
                .map(|i| (page as usize * 7 + i) as u8)
                .collect()
        };
        for page in 0..3 * ppb {
            st.write_split(page, &[], &spare_of(page)).unwrap();
        }
        for blk in st.blocks.iter().flatten() {
            assert_eq!(blk.slots().as_ptr() as usize % LINE, 0);
        }
        // Clones land at other offsets from a line boundary; what they read must not move.
        let mut keep = Vec::new();
        for pad in 1..9usize {
            keep.push(vec![0u8; pad * 8]);
            let mut c = st.clone();
            for page in 0..3 * ppb {
                let mut got = vec![0u8; spare_size];
                c.read_spare(page, g.page_size as usize, &mut got).unwrap();
                let want = spare_of(page);
                assert_eq!(&got[..45], &want[..45], "page {page} after clone {pad}");
                assert!(got[45..].iter().all(|&b| b == 0xFF));
            }
        }
    }

    /// A clone copies the frames pages refer to — data shared between pages, rewritten
    /// and released included — and the two stores then diverge independently.
    #[test]
    fn whole_page_clones_copy_what_pages_refer_to() {
        let g = crate::ChipConfig::preset("tiny-slc").unwrap().geometry;
        let (ps, ss) = (g.page_size as usize, g.spare_size as usize);
        let ppb = g.pages_per_block as u64;
        let data =
            |page: u64, v: u8| -> Vec<u8> { (0..ps).map(|i| (i as u8) ^ v ^ page as u8).collect() };
        let mut st = RamStorage::new(&g);
        let spare = vec![0xA5u8; ss];
        for page in 0..2 * ppb {
            st.write_split(page, &data(page, 1), &spare).unwrap();
        }
        // A page sharing another's frame, and a block erased (its frames released).
        st.write_copy(2 * ppb, 3, ps, &spare).unwrap();
        st.discard(ppb, ppb as u32).unwrap();
        let c = st.clone();
        let mut st2 = c.clone();
        for page in 0..ppb {
            let mut got = vec![0u8; ps];
            st2.read_split(page, &mut got, &mut vec![0u8; ss]).unwrap();
            assert_eq!(got, data(page, 1), "page {page}");
        }
        let mut got = vec![0u8; ps];
        st2.read_split(2 * ppb, &mut got, &mut vec![0u8; ss])
            .unwrap();
        assert_eq!(got, data(3, 1));
        // Writes to the clone leave the original as it was.
        st2.discard(0, ppb as u32).unwrap();
        st2.write_split(0, &data(0, 9), &spare).unwrap();
        st.read_split(0, &mut got, &mut vec![0u8; ss]).unwrap();
        assert_eq!(got, data(0, 1));
    }
}
