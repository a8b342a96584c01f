//! The headed pages of a checkpoint region: the 32-byte header every checkpoint, log and
//! trailer page starts with (FORMAT.md, "Checkpoint region page"), and the version rule
//! the region's structures share.

use crate::FtlError;

/// The magic of a checkpoint page.
const MAGIC: [u8; 4] = *b"NLCP";
/// The version of the region's structures (checkpoint pages and anchor records), byte 4.
pub(super) const VERSION: u8 = 1;

/// Whether `page` starts with `magic` (and holds at least `len` bytes) in this build's
/// version: `Ok(false)` if it is not such a structure, an error naming `what` if it is one
/// of a version this build does not read (a newer build's region). The version is byte 4.
pub(super) fn versioned(
    page: &[u8],
    len: usize,
    magic: &[u8; 4],
    what: &'static str,
) -> Result<bool, FtlError> {
    if page.len() < len || page[..4] != *magic {
        return Ok(false);
    }
    if page[4] != VERSION {
        return Err(FtlError::UnknownFormat {
            what,
            version: page[4] as u32,
            newest: VERSION as u32,
        });
    }
    Ok(true)
}

/// Header bytes at the start of every checkpoint page.
pub(crate) const HEADER: usize = 32;
const KIND_BODY: u8 = 0;
const KIND_LOG: u8 = 1;
/// A generation's last body page carrying log entries (see the module docs).
const KIND_TRAILER: u8 = 2;

/// The header of a checkpoint page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PageHeader {
    pub log: bool,
    /// A body page holding log entries (a stepped generation's last body page).
    pub trailer: bool,
    pub gen: u64,
    pub index: u32,
    pub body_pages: u32,
    pub len: u32,
}

impl PageHeader {
    /// Writes the header into the first [`HEADER`] bytes of `page`.
    pub(super) fn write(&self, page: &mut [u8]) {
        page[..4].copy_from_slice(&MAGIC);
        page[4] = VERSION;
        page[5] = if self.log {
            KIND_LOG
        } else if self.trailer {
            KIND_TRAILER
        } else {
            KIND_BODY
        };
        page[6..8].fill(0);
        page[8..16].copy_from_slice(&self.gen.to_le_bytes());
        page[16..20].copy_from_slice(&self.index.to_le_bytes());
        page[20..24].copy_from_slice(&self.body_pages.to_le_bytes());
        page[24..28].copy_from_slice(&self.len.to_le_bytes());
        page[28..32].fill(0);
    }

    /// Parses a page's header; `None` if it is not a checkpoint page, an error if it is
    /// one of a version this build does not read (a newer build's region).
    pub fn read(page: &[u8]) -> Result<Option<Self>, FtlError> {
        if !versioned(page, HEADER, &MAGIC, "checkpoint region page")? {
            return Ok(None);
        }
        let kind = page[5];
        if kind > KIND_TRAILER {
            return Ok(None);
        }
        let u32_at = |o: usize| u32::from_le_bytes(page[o..o + 4].try_into().expect("4 bytes"));
        let h = PageHeader {
            log: kind == KIND_LOG,
            trailer: kind == KIND_TRAILER,
            gen: u64::from_le_bytes(page[8..16].try_into().expect("8 bytes")),
            index: u32_at(16),
            body_pages: u32_at(20),
            len: u32_at(24),
        };
        Ok((h.len as usize <= page.len() - HEADER).then_some(h))
    }
}
