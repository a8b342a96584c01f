use super::Storage;
use crate::error::StorageError;
use crate::geometry::Geometry;
use alloc::boxed::Box;
use alloc::vec;
use alloc::vec::Vec;

/// Sparse RAM storage: a block's buffer is allocated on its first program and freed by its
/// erase, so memory grows with the blocks in use, never with the chip's size.
///
/// In digest mode ([`RamStorage::digest`], the payload mode of multi-GiB simulations) only
/// the first `keep` bytes of each page's spare area are kept; the data area reads back as
/// zeros and the rest of the spare as erased (0xFF). The chip's rules, timing and wear are
/// unchanged; callers identify page contents by records they keep in that spare prefix.
#[derive(Debug, Clone)]
pub struct RamStorage {
    page_size: usize,
    /// Bytes kept per page: the whole raw page, or a spare prefix in digest mode.
    kept: usize,
    /// Offset in the raw page of the first byte kept.
    skip: usize,
    pages_per_block: u64,
    blocks: Vec<Option<Box<[u8]>>>,
    /// Pages written per block since its erase (for accounting).
    written: Vec<u32>,
    stored_pages: u64,
    /// Buffers of erased blocks kept for reuse (no allocator round trip, no page faults on
    /// the next program); at most [`POOL`] of them.
    pool: Vec<Box<[u8]>>,
    /// Blocks kept whole in digest mode (an FTL's metadata region), with their storage.
    full: Option<(Vec<bool>, Box<RamStorage>)>,
}

/// Block buffers kept for reuse after erases.
const POOL: usize = 64;

impl RamStorage {
    /// Empty storage for a chip of `geometry`, keeping whole pages.
    pub fn new(geometry: &Geometry) -> Self {
        let raw = geometry.raw_page_size();
        RamStorage {
            page_size: geometry.page_size as usize,
            kept: raw,
            skip: 0,
            pages_per_block: geometry.pages_per_block as u64,
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
        if self.skip != 0 {
            self.full = Some((mask, Box::new(RamStorage::new(geometry))));
        }
        self
    }

    /// The whole-page store of `page`'s block, when that block is kept whole.
    fn full_of(&mut self, page: u64) -> Option<&mut RamStorage> {
        let b = (page / self.pages_per_block) as usize;
        match &mut self.full {
            Some((mask, st)) if mask.get(b).copied().unwrap_or(false) => Some(st),
            _ => None,
        }
    }

    /// Digest-mode storage keeping only the first `keep` spare bytes of each page.
    pub fn digest(geometry: &Geometry, keep: usize) -> Self {
        let keep = keep.min(geometry.spare_size as usize);
        RamStorage {
            kept: keep,
            skip: geometry.page_size as usize,
            ..RamStorage::new(geometry)
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

    /// Bytes of page content currently held for written pages.
    pub fn stored_bytes(&self) -> u64 {
        self.stored_pages * self.kept as u64
    }

    /// Bytes allocated for page content (whole blocks in use; pooled buffers of erased
    /// blocks not counted).
    pub fn allocated_bytes(&self) -> u64 {
        self.blocks.iter().filter(|b| b.is_some()).count() as u64
            * self.pages_per_block
            * self.kept as u64
    }

    fn split(&self, page: u64) -> (usize, usize) {
        (
            (page / self.pages_per_block) as usize,
            (page % self.pages_per_block) as usize,
        )
    }

    fn slot(&mut self, page: u64) -> &mut [u8] {
        let (b, p) = self.split(page);
        let size = self.pages_per_block as usize * self.kept;
        let pool = &mut self.pool;
        // A reused buffer holds stale bytes; the chip never reads a page it has not
        // written since the erase (the Storage contract), so they are never seen.
        let blk = self.blocks[b].get_or_insert_with(|| {
            pool.pop()
                .unwrap_or_else(|| vec![0u8; size].into_boxed_slice())
        });
        &mut blk[p * self.kept..(p + 1) * self.kept]
    }

    fn count(&mut self, page: u64) {
        let (b, _) = self.split(page);
        self.written[b] += 1;
        self.stored_pages += 1;
    }
}

impl RamStorage {
    /// The kept bytes of a written page (`None` if its block holds nothing).
    fn stored(&self, page: u64) -> Option<&[u8]> {
        let (b, p) = self.split(page);
        self.blocks[b]
            .as_ref()
            .map(|blk| &blk[p * self.kept..(p + 1) * self.kept])
    }

    /// The spare area as read back from the kept bytes `src`.
    fn spare_from(&self, src: &[u8], spare: &mut [u8]) {
        if self.skip == 0 {
            spare.copy_from_slice(&src[self.page_size..]);
        } else {
            spare[..self.kept].copy_from_slice(src);
            spare[self.kept..].fill(0xFF);
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
        if let Some(f) = self.full_of(page) {
            return f.read_split(page, data, spare);
        }
        let Some(src) = self.stored(page) else {
            data.fill(0xFF);
            spare.fill(0xFF);
            return Ok(());
        };
        if self.skip == 0 {
            data.copy_from_slice(&src[..self.page_size]);
        } else {
            data.fill(0);
        }
        self.spare_from(src, spare);
        Ok(())
    }

    fn read_spare(
        &mut self,
        page: u64,
        _page_size: usize,
        spare: &mut [u8],
    ) -> Result<(), StorageError> {
        if let Some(f) = self.full_of(page) {
            return f.read_spare(page, _page_size, spare);
        }
        match self.stored(page) {
            Some(src) => self.spare_from(src, spare),
            None => spare.fill(0xFF),
        }
        Ok(())
    }

    fn write(&mut self, page: u64, image: &[u8]) -> Result<(), StorageError> {
        if let Some(f) = self.full_of(page) {
            return f.write(page, image);
        }
        let (skip, kept) = (self.skip, self.kept);
        self.slot(page).copy_from_slice(&image[skip..skip + kept]);
        self.count(page);
        Ok(())
    }

    fn write_split(&mut self, page: u64, data: &[u8], spare: &[u8]) -> Result<(), StorageError> {
        if let Some(f) = self.full_of(page) {
            return f.write_split(page, data, spare);
        }
        let (skip, kept, ps) = (self.skip, self.kept, self.page_size);
        let dst = self.slot(page);
        if skip == 0 {
            dst[..ps].copy_from_slice(data);
            dst[ps..].copy_from_slice(spare);
        } else {
            dst.copy_from_slice(&spare[..kept]);
        }
        self.count(page);
        Ok(())
    }

    fn discard(&mut self, first: u64, _count: u32) -> Result<(), StorageError> {
        if let Some(f) = self.full_of(first) {
            return f.discard(first, _count);
        }
        let (b, _) = self.split(first);
        if let Some(buf) = self.blocks[b].take() {
            if self.pool.len() < POOL {
                self.pool.push(buf);
            }
        }
        self.stored_pages -= self.written[b] as u64;
        self.written[b] = 0;
        Ok(())
    }
}
