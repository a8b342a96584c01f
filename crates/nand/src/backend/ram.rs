use super::Storage;
use crate::error::StorageError;
use crate::geometry::Geometry;
use alloc::boxed::Box;
use alloc::vec;
use alloc::vec::Vec;

/// The page images of one block (`None` = never written since erase).
type BlockPages = Box<[Option<Box<[u8]>>]>;

/// Sparse RAM storage: memory grows with programmed pages only. A block's page table is
/// allocated on its first program and freed by its erase.
///
/// In spare-only mode ([`RamStorage::spare_only`], the "digest" payload mode of
/// multi-GiB simulations) only the spare area of each page is kept and the data area reads
/// back as zeros: the chip's rules, timing and wear are unchanged, and callers identify page
/// contents by tokens they keep in the spare area.
#[derive(Debug, Clone)]
pub struct RamStorage {
    raw_page: usize,
    /// Bytes of the image not kept (the data area in spare-only mode, else 0).
    skip: usize,
    pages_per_block: u64,
    blocks: Vec<Option<BlockPages>>,
    stored_pages: u64,
}

impl RamStorage {
    /// Empty storage for a chip of `geometry`.
    pub fn new(geometry: &Geometry) -> Self {
        RamStorage {
            raw_page: geometry.raw_page_size(),
            skip: 0,
            pages_per_block: geometry.pages_per_block as u64,
            blocks: vec![None; geometry.total_blocks() as usize],
            stored_pages: 0,
        }
    }

    /// Storage that keeps only spare areas (see the type docs).
    pub fn spare_only(geometry: &Geometry) -> Self {
        RamStorage {
            skip: geometry.page_size as usize,
            ..RamStorage::new(geometry)
        }
    }

    /// Pages currently holding data.
    pub fn stored_pages(&self) -> u64 {
        self.stored_pages
    }

    /// Bytes of page images currently held.
    pub fn stored_bytes(&self) -> u64 {
        self.stored_pages * (self.raw_page - self.skip) as u64
    }

    fn split(&self, page: u64) -> (usize, usize) {
        (
            (page / self.pages_per_block) as usize,
            (page % self.pages_per_block) as usize,
        )
    }
}

impl Storage for RamStorage {
    fn read(&mut self, page: u64, buf: &mut [u8]) -> Result<(), StorageError> {
        let (b, p) = self.split(page);
        match self.blocks[b].as_ref().and_then(|blk| blk[p].as_ref()) {
            Some(img) => {
                buf[..self.skip].fill(0);
                buf[self.skip..].copy_from_slice(img);
            }
            None => buf.fill(0xFF),
        }
        Ok(())
    }

    fn write(&mut self, page: u64, image: &[u8]) -> Result<(), StorageError> {
        let (b, p) = self.split(page);
        let ppb = self.pages_per_block as usize;
        let blk = self.blocks[b].get_or_insert_with(|| vec![None; ppb].into_boxed_slice());
        let kept = &image[self.skip..];
        match &mut blk[p] {
            Some(img) => img.copy_from_slice(kept),
            slot @ None => {
                *slot = Some(kept.into());
                self.stored_pages += 1;
            }
        }
        Ok(())
    }

    fn discard(&mut self, first: u64, _count: u32) -> Result<(), StorageError> {
        let (b, _) = self.split(first);
        if let Some(blk) = self.blocks[b].take() {
            self.stored_pages -= blk.iter().filter(|p| p.is_some()).count() as u64;
        }
        Ok(())
    }
}
