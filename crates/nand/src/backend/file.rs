//! A chip image in one file: it persists data, spare, erase counts, bad blocks, modes and
//! timestamps, survives a process restart (and a SIGKILL: every change is written through
//! before the operation returns), and rejects a truncated or corrupted image.
//!
//! Layout (little-endian):
//!
//! | offset | size | content |
//! |---|---|---|
//! | 0 | 8 KiB | header: magic `NANDLAB\x1aIMAGE\0`, format version (u32), config length (u32), image size (u64), the chip config as TOML; at byte 8160 the clock record (below); CRC32 of the header before the clock record in the last 4 bytes |
//! | 8 KiB | 32 B × blocks | block records ([`BlockMeta::encode`]) |
//! | … | 24 B × pages | page records ([`PageMeta::encode`]) |
//! | … (4 KiB aligned) | (page + spare) × pages | raw page images |
//!
//! The clock record (format 2; 24 bytes: `CLK1`, simulated time in ns (u64), wall-clock
//! time in ns since the Unix epoch (u64), CRC32 of those 20 bytes) is the simulated time at
//! the last save and the wall time it was saved at, so a volume served again a day later
//! resumes its clock a day later and its data reads a day older. Format-1 images (no clock
//! record; their CRC covers the whole header) are still read.
//!
//! All-zero records mean the default state, so a freshly created image is a sparse file.
//! Write order within an operation is data, then page record, then block record; an erase
//! resets the page records before the block record, so a process killed in between leaves
//! a block that merely needs another erase.

use super::{Storage, StoredState};
use crate::config::ChipConfig;
use crate::error::StorageError;
use crate::state::{BlockMeta, PageMeta, BLOCK_RECORD, PAGE_RECORD};
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::string::ToString;
use std::vec;
use std::vec::Vec;

const MAGIC: &[u8; 16] = b"NANDLAB\x1aIMAGE\0\0\0";
/// The image format version this build writes (it also reads version 1).
pub const FORMAT_VERSION: u32 = 2;
const HEADER_SIZE: u64 = 8192;
/// Offset of the clock record in the header (format 2).
const CLOCK_OFF: usize = 8160;
const CLOCK_MAGIC: &[u8; 4] = b"CLK1";

/// A file-backed chip image (see the module docs for the format).
#[derive(Debug)]
pub struct FileStorage {
    file: File,
    raw_page: u64,
    blocks_off: u64,
    pages_off: u64,
    data_off: u64,
    fresh: bool,
    total_blocks: u32,
    total_pages: u64,
    /// The clock record found at open (simulated ns, Unix ns), if any.
    clock: Option<(u64, u64)>,
    /// Whether this image has a clock record slot (format 2).
    has_clock: bool,
}

fn io(e: std::io::Error) -> StorageError {
    StorageError::Io(e.to_string())
}

struct Layout {
    blocks_off: u64,
    pages_off: u64,
    data_off: u64,
    size: u64,
}

fn layout(config: &ChipConfig) -> Layout {
    let g = &config.geometry;
    let blocks_off = HEADER_SIZE;
    let pages_off = blocks_off + g.total_blocks() as u64 * BLOCK_RECORD as u64;
    let data_off = (pages_off + g.total_pages() * PAGE_RECORD as u64).next_multiple_of(4096);
    let size = data_off + g.total_pages() * g.raw_page_size() as u64;
    Layout {
        blocks_off,
        pages_off,
        data_off,
        size,
    }
}

impl FileStorage {
    /// Creates (or truncates) an image at `path` for a chip of `config`, and locks it.
    pub fn create(path: &Path, config: &ChipConfig) -> Result<Self, StorageError> {
        config
            .validate()
            .map_err(|e| StorageError::BadHeader(e.to_string()))?;
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(io)?;
        lock(&file)?;
        file.set_len(0).map_err(io)?;
        let l = layout(config);
        let toml = config.to_toml_string();
        let mut header = vec![0u8; HEADER_SIZE as usize];
        let body = 16 + 4 + 4 + 8 + toml.len();
        if body > CLOCK_OFF {
            return Err(StorageError::BadHeader(
                "chip config too large for the header".to_string(),
            ));
        }
        header[0..16].copy_from_slice(MAGIC);
        header[16..20].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
        header[20..24].copy_from_slice(&(toml.len() as u32).to_le_bytes());
        header[24..32].copy_from_slice(&l.size.to_le_bytes());
        header[32..body].copy_from_slice(toml.as_bytes());
        let crc = crc32fast::hash(&header[..CLOCK_OFF]);
        let n = header.len();
        header[n - 4..].copy_from_slice(&crc.to_le_bytes());
        file.set_len(l.size).map_err(io)?;
        file.write_all_at(&header, 0).map_err(io)?;
        Ok(Self::with(file, config, l, true, None, true))
    }

    /// Opens an existing image, checking magic, version, header checksum and size. Returns
    /// the storage and the chip config stored in it; the chip state is loaded when a
    /// [`Chip`](crate::Chip) is built on it.
    pub fn open(path: &Path) -> Result<(Self, ChipConfig), StorageError> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(io)?;
        lock(&file)?;
        let found = file.metadata().map_err(io)?.len();
        if found < HEADER_SIZE {
            return Err(StorageError::Size {
                found,
                expected: HEADER_SIZE,
            });
        }
        let mut header = vec![0u8; HEADER_SIZE as usize];
        file.read_exact_at(&mut header, 0).map_err(io)?;
        if &header[0..16] != MAGIC {
            return Err(StorageError::BadHeader(
                "not a nandlab chip image (bad magic)".to_string(),
            ));
        }
        let version = u32::from_le_bytes(header[16..20].try_into().unwrap());
        if version != FORMAT_VERSION && version != 1 {
            return Err(StorageError::Version {
                found: version,
                supported: FORMAT_VERSION,
            });
        }
        let n = header.len();
        let crc = u32::from_le_bytes(header[n - 4..].try_into().unwrap());
        let covered = if version == 1 { n - 4 } else { CLOCK_OFF };
        if crc32fast::hash(&header[..covered]) != crc {
            return Err(StorageError::BadHeader(
                "header checksum mismatch".to_string(),
            ));
        }
        let toml_len = u32::from_le_bytes(header[20..24].try_into().unwrap()) as usize;
        let expected = u64::from_le_bytes(header[24..32].try_into().unwrap());
        let toml = header
            .get(32..32 + toml_len)
            .and_then(|b| core::str::from_utf8(b).ok())
            .ok_or_else(|| StorageError::BadHeader("config is not UTF-8".to_string()))?;
        let config = ChipConfig::from_toml_str(toml)
            .map_err(|e| StorageError::BadHeader(std::format!("stored chip config: {e}")))?;
        let l = layout(&config);
        if l.size != expected || found != expected {
            return Err(StorageError::Size {
                found,
                expected: l.size.max(expected),
            });
        }
        let has_clock = version >= 2;
        let clock = if has_clock {
            let r = &header[CLOCK_OFF..CLOCK_OFF + 24];
            let ok = &r[..4] == CLOCK_MAGIC && crc32fast::hash(&r[..20]).to_le_bytes() == r[20..24];
            ok.then(|| {
                (
                    u64::from_le_bytes(r[4..12].try_into().unwrap()),
                    u64::from_le_bytes(r[12..20].try_into().unwrap()),
                )
            })
        } else {
            None
        };
        Ok((
            Self::with(file, &config, l, false, clock, has_clock),
            config,
        ))
    }

    /// The clock record saved last (simulated ns, wall-clock ns since the Unix epoch), if
    /// the image holds one.
    pub fn clock(&self) -> Option<(u64, u64)> {
        self.clock
    }

    /// Saves the clock record (written through, like every change). A format-1 image has
    /// no slot for it: the call does nothing there.
    pub fn save_clock(&mut self, sim_ns: u64, unix_ns: u64) -> Result<(), StorageError> {
        if !self.has_clock {
            return Ok(());
        }
        let mut r = [0u8; 24];
        r[..4].copy_from_slice(CLOCK_MAGIC);
        r[4..12].copy_from_slice(&sim_ns.to_le_bytes());
        r[12..20].copy_from_slice(&unix_ns.to_le_bytes());
        let crc = crc32fast::hash(&r[..20]);
        r[20..24].copy_from_slice(&crc.to_le_bytes());
        self.file.write_all_at(&r, CLOCK_OFF as u64).map_err(io)?;
        self.clock = Some((sim_ns, unix_ns));
        Ok(())
    }

    fn with(
        file: File,
        config: &ChipConfig,
        l: Layout,
        fresh: bool,
        clock: Option<(u64, u64)>,
        has_clock: bool,
    ) -> Self {
        let g = &config.geometry;
        FileStorage {
            file,
            raw_page: g.raw_page_size() as u64,
            blocks_off: l.blocks_off,
            pages_off: l.pages_off,
            data_off: l.data_off,
            fresh,
            total_blocks: g.total_blocks(),
            clock,
            has_clock,
            total_pages: g.total_pages(),
        }
    }
}

fn lock(file: &File) -> Result<(), StorageError> {
    match file.try_lock() {
        Ok(()) => Ok(()),
        Err(std::fs::TryLockError::WouldBlock) => Err(StorageError::Locked(
            "another process holds its lock".to_string(),
        )),
        Err(std::fs::TryLockError::Error(e)) => Err(io(e)),
    }
}

impl Storage for FileStorage {
    fn read(&mut self, page: u64, buf: &mut [u8]) -> Result<(), StorageError> {
        self.file
            .read_exact_at(buf, self.data_off + page * self.raw_page)
            .map_err(io)
    }

    fn read_spare(
        &mut self,
        page: u64,
        page_size: usize,
        spare: &mut [u8],
    ) -> Result<(), StorageError> {
        self.file
            .read_exact_at(
                spare,
                self.data_off + page * self.raw_page + page_size as u64,
            )
            .map_err(io)
    }

    fn write(&mut self, page: u64, image: &[u8]) -> Result<(), StorageError> {
        self.file
            .write_all_at(image, self.data_off + page * self.raw_page)
            .map_err(io)
    }

    fn discard(&mut self, _first: u64, _count: u32) -> Result<(), StorageError> {
        // The page records say the pages are erased; their stale bytes are never read.
        Ok(())
    }

    fn save_block(&mut self, block: u32, meta: &BlockMeta) -> Result<(), StorageError> {
        self.file
            .write_all_at(
                &meta.encode(),
                self.blocks_off + block as u64 * BLOCK_RECORD as u64,
            )
            .map_err(io)
    }

    fn save_page(&mut self, page: u64, meta: &PageMeta) -> Result<(), StorageError> {
        self.file
            .write_all_at(&meta.encode(), self.pages_off + page * PAGE_RECORD as u64)
            .map_err(io)
    }

    fn reset_pages(&mut self, first: u64, count: u32) -> Result<(), StorageError> {
        let zeros = vec![0u8; count as usize * PAGE_RECORD];
        self.file
            .write_all_at(&zeros, self.pages_off + first * PAGE_RECORD as u64)
            .map_err(io)
    }

    fn stored_state(&mut self) -> Result<Option<StoredState>, StorageError> {
        if self.fresh {
            return Ok(None);
        }
        let mut raw = vec![0u8; self.total_blocks as usize * BLOCK_RECORD];
        self.file
            .read_exact_at(&mut raw, self.blocks_off)
            .map_err(io)?;
        let mut blocks = Vec::with_capacity(self.total_blocks as usize);
        for (i, rec) in raw.chunks_exact(BLOCK_RECORD).enumerate() {
            blocks.push(BlockMeta::decode(rec.try_into().unwrap()).ok_or(
                StorageError::Corrupt {
                    what: "block",
                    index: i as u64,
                },
            )?);
        }
        let mut pages = Vec::new();
        const CHUNK: u64 = 1 << 16;
        let mut buf = vec![0u8; CHUNK as usize * PAGE_RECORD];
        let mut first = 0u64;
        while first < self.total_pages {
            let n = CHUNK.min(self.total_pages - first);
            let slice = &mut buf[..n as usize * PAGE_RECORD];
            self.file
                .read_exact_at(slice, self.pages_off + first * PAGE_RECORD as u64)
                .map_err(io)?;
            for (i, rec) in slice.chunks_exact(PAGE_RECORD).enumerate() {
                if rec.iter().all(|&b| b == 0) {
                    continue;
                }
                let index = first + i as u64;
                let meta =
                    PageMeta::decode(rec.try_into().unwrap()).ok_or(StorageError::Corrupt {
                        what: "page",
                        index,
                    })?;
                pages.push((index, meta));
            }
            first += n;
        }
        Ok(Some(StoredState { blocks, pages }))
    }

    fn sync(&mut self) -> Result<(), StorageError> {
        self.file.sync_data().map_err(io)
    }
}
