//! Where a chip keeps its bytes and, for persistent backends, its state.
//!
//! The [`Chip`](crate::Chip) owns the rules and the in-memory state; a [`Storage`] stores
//! raw page images (data followed by spare) and, if it is persistent, every change of block
//! and page state, so that a chip reopened from it is the same chip.

mod ram;
pub use ram::RamStorage;

/// A lossless compact form of the spare bytes a digest-mode [`RamStorage`] keeps per page
/// ([`RamStorage::with_packer`]).
///
/// The storage knows nothing of what the bytes mean; whoever writes them (the controller,
/// which lays out the spare area) knows which of them follow from the others — a checksum,
/// a parity, a header repeated three times — and supplies a packer that drops them. Bytes
/// without a compact form (a torn program's noise, a field too wide for the form) are
/// kept verbatim beside the slots, so the store reads back exactly what was programmed
/// either way: packing changes memory and time, never a result.
pub trait SparePacker: core::fmt::Debug + Send + Sync {
    /// Bytes of the compact form (less than the kept bytes, for a packer to pay).
    fn packed_len(&self) -> usize;
    /// Writes the compact form of `kept` (the kept spare prefix) into `out`
    /// ([`packed_len`](SparePacker::packed_len) bytes) and returns true, or returns false
    /// when `kept` has none. A compact form is never all 0xFF bytes (the store's mark for
    /// bytes kept verbatim), and [`unpack`](SparePacker::unpack) of it gives `kept` back.
    fn pack(&self, kept: &[u8], out: &mut [u8]) -> bool;
    /// The kept bytes whose compact form is `packed`, into `kept`.
    fn unpack(&self, packed: &[u8], kept: &mut [u8]);
}

#[cfg(feature = "std")]
mod file;
#[cfg(feature = "std")]
pub use file::FileStorage;

use crate::error::StorageError;
use crate::state::{BlockMeta, PageMeta};
use alloc::vec::Vec;

/// Chip state recovered from a persistent backend.
#[derive(Debug, Clone, Default)]
pub struct StoredState {
    /// Per flat block index.
    pub blocks: Vec<BlockMeta>,
    /// Flat page index and state of every page that is not in the default (erased, unread)
    /// state.
    pub pages: Vec<(u64, PageMeta)>,
}

/// [`Storage::write_copy`] by reading `from` into a buffer and writing it as `page`.
pub(crate) fn copy_through_buffer<S: Storage + ?Sized>(
    storage: &mut S,
    page: u64,
    from: u64,
    page_size: usize,
    spare: &[u8],
) -> Result<(), StorageError> {
    let mut data = alloc::vec![0u8; page_size];
    let mut old_spare = alloc::vec![0u8; spare.len()];
    storage.read_split(from, &mut data, &mut old_spare)?;
    storage.write_split(page, &data, spare)
}

/// A storage backend. Page indices are flat (see
/// [`Geometry::page_index`](crate::Geometry::page_index)); a raw page image is
/// `page_size + spare_size` bytes.
///
/// Contract: the chip calls [`read`](Storage::read) only for pages it has written since their
/// last [`discard`](Storage::discard), so a backend need not remember erased pages.
pub trait Storage {
    /// Copies the stored image of `page` into `buf` (one raw page).
    fn read(&mut self, page: u64, buf: &mut [u8]) -> Result<(), StorageError>;
    /// Stores `image` (one raw page) as the content of `page`.
    fn write(&mut self, page: u64, image: &[u8]) -> Result<(), StorageError>;
    /// Reads `page` into separate data and spare buffers (a fast path; the default goes
    /// through [`read`](Storage::read)).
    fn read_split(
        &mut self,
        page: u64,
        data: &mut [u8],
        spare: &mut [u8],
    ) -> Result<(), StorageError> {
        let mut image = alloc::vec![0u8; data.len() + spare.len()];
        self.read(page, &mut image)?;
        data.copy_from_slice(&image[..data.len()]);
        spare.copy_from_slice(&image[data.len()..]);
        Ok(())
    }
    /// Reads only the spare area of `page` (a fast path; the default reads the whole page).
    fn read_spare(
        &mut self,
        page: u64,
        page_size: usize,
        spare: &mut [u8],
    ) -> Result<(), StorageError> {
        let mut data = alloc::vec![0u8; page_size];
        self.read_split(page, &mut data, spare)
    }
    /// Stores a page given as separate data and spare (a fast path for whole-page programs
    /// of erased pages; the default goes through [`write`](Storage::write)).
    fn write_split(&mut self, page: u64, data: &[u8], spare: &[u8]) -> Result<(), StorageError> {
        let mut image = alloc::vec::Vec::with_capacity(data.len() + spare.len());
        image.extend_from_slice(data);
        image.extend_from_slice(spare);
        self.write(page, &image)
    }
    /// Stores as `page` the data area (`page_size` bytes) that `from` holds and the spare
    /// area `spare` (a program whose data is a copy of another page's, as GC relocation
    /// programs). The default goes through a buffer; a backend may share the bytes instead.
    fn write_copy(
        &mut self,
        page: u64,
        from: u64,
        page_size: usize,
        spare: &[u8],
    ) -> Result<(), StorageError> {
        copy_through_buffer(self, page, from, page_size, spare)
    }
    /// Hints the CPU to load the start of `page`'s stored image (a hint: changes nothing).
    fn prefetch(&self, _page: u64) {}
    /// Hints the CPU to load all of `page`'s stored data area, for a read that will copy it
    /// out (a hint: changes nothing).
    fn prefetch_data(&self, _page: u64) {}
    /// Keeps (`true`) or stops keeping the whole pages of flat block `block` in a backend
    /// that otherwise stores less of them (digest mode): an FTL whose metadata region moves
    /// through the blocks says so when a block joins or leaves it, while the block is
    /// erased. The default (a backend that keeps everything) ignores it.
    fn keep_whole(&mut self, _block: u32, _keep: bool) {}
    /// Forgets the content of `count` pages from `first` (a block erase).
    fn discard(&mut self, first: u64, count: u32) -> Result<(), StorageError>;
    /// Persists the state of flat block `block` (no-op for volatile backends).
    fn save_block(&mut self, _block: u32, _meta: &BlockMeta) -> Result<(), StorageError> {
        Ok(())
    }
    /// Persists the state of flat page `page` (no-op for volatile backends).
    fn save_page(&mut self, _page: u64, _meta: &PageMeta) -> Result<(), StorageError> {
        Ok(())
    }
    /// Persists the default state for `count` pages from `first` (after an erase).
    fn reset_pages(&mut self, _first: u64, _count: u32) -> Result<(), StorageError> {
        Ok(())
    }
    /// The state a reopened persistent backend holds; `None` for a fresh one.
    fn stored_state(&mut self) -> Result<Option<StoredState>, StorageError> {
        Ok(None)
    }
    /// Makes everything written so far durable (fsync for files).
    fn sync(&mut self) -> Result<(), StorageError> {
        Ok(())
    }
}
