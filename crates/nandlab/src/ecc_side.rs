//! The side file of `nandlab ecc encode`: a header naming the code, then per sector its BCH
//! parity and a CRC32C of the sector's data, so that `ecc decode` uses exactly the code the
//! parity was made with and catches miscorrections (more than t errors can decode to
//! another codeword; the CRC of the result then does not match).
//!
//! Layout (little-endian):
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 8 | magic `NLBCHSF1` |
//! | 8 | 4 | flags (bit 0: records carry a CRC32C) |
//! | 12 | 4 | m |
//! | 16 | 4 | t |
//! | 20 | 4 | primitive polynomial |
//! | 24 | 4 | sector bytes |
//! | 28 | 4 | parity bytes per sector |
//! | 32 | 8 | protected data length in bytes |
//! | 40 | 4 | CRC32C of bytes 0..40 |
//! | 44 | … | per sector: parity, then CRC32C of the sector's data (if flagged) |
//!
//! `--no-crc` writes the bare parity instead (the bytes Linux `lib/bch.c` produces, sector
//! after sector), which `ecc decode` reads with the code given on its command line.

use anyhow::{bail, Result};
use std::path::Path;

const MAGIC: &[u8; 8] = b"NLBCHSF1";
/// Header length in bytes.
pub const HEADER: usize = 44;
const FLAG_CRC: u32 = 1;

/// What the header records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SideHeader {
    /// Whether each record ends with the sector's CRC32C.
    pub crc: bool,
    /// Field degree.
    pub m: u32,
    /// Correction capability per sector.
    pub t: u32,
    /// Primitive polynomial.
    pub poly: u32,
    /// Sector (codeword data) bytes.
    pub sector: u32,
    /// Parity bytes per sector.
    pub ecc_bytes: u32,
    /// Length of the protected file.
    pub data_len: u64,
}

impl SideHeader {
    /// Bytes per sector record.
    pub fn record(&self) -> usize {
        self.ecc_bytes as usize + if self.crc { 4 } else { 0 }
    }

    /// Sectors of the protected file.
    pub fn sectors(&self) -> u64 {
        self.data_len.div_ceil(self.sector as u64)
    }

    /// The header's bytes.
    pub fn to_bytes(self) -> [u8; HEADER] {
        let mut h = [0u8; HEADER];
        h[..8].copy_from_slice(MAGIC);
        let flags = if self.crc { FLAG_CRC } else { 0 };
        for (i, v) in [
            flags,
            self.m,
            self.t,
            self.poly,
            self.sector,
            self.ecc_bytes,
        ]
        .iter()
        .enumerate()
        {
            h[8 + 4 * i..12 + 4 * i].copy_from_slice(&v.to_le_bytes());
        }
        h[32..40].copy_from_slice(&self.data_len.to_le_bytes());
        let crc = crc32c::crc32c(&h[..40]);
        h[40..44].copy_from_slice(&crc.to_le_bytes());
        h
    }

    /// The header at the start of `file` (read from `path`), with the records after it;
    /// `None` if the file does not start with the magic (a bare parity file). A header that
    /// fails its CRC, unknown flags, or records that do not add up to the recorded data
    /// length are errors naming the file and what is wrong.
    pub fn parse<'a>(file: &'a [u8], path: &Path) -> Result<Option<(SideHeader, &'a [u8])>> {
        if file.len() < 8 || &file[..8] != MAGIC {
            return Ok(None);
        }
        if file.len() < HEADER {
            bail!(
                "side file {} is truncated: {} bytes, the header alone is {HEADER}",
                path.display(),
                file.len()
            );
        }
        let word = |i: usize| u32::from_le_bytes(file[8 + 4 * i..12 + 4 * i].try_into().unwrap());
        let stored = u32::from_le_bytes(file[40..44].try_into().unwrap());
        if crc32c::crc32c(&file[..40]) != stored {
            bail!(
                "side file {}: its header is corrupt (CRC32C mismatch)",
                path.display()
            );
        }
        let flags = word(0);
        if flags & !FLAG_CRC != 0 {
            bail!(
                "side file {}: unknown flags {flags:#x} (written by a newer nandlab?)",
                path.display()
            );
        }
        let h = SideHeader {
            crc: flags & FLAG_CRC != 0,
            m: word(1),
            t: word(2),
            poly: word(3),
            sector: word(4),
            ecc_bytes: word(5),
            data_len: u64::from_le_bytes(file[32..40].try_into().unwrap()),
        };
        if h.sector == 0 {
            bail!("side file {}: sector size 0 in its header", path.display());
        }
        let records = &file[HEADER..];
        let expected = h.sectors().checked_mul(h.record() as u64);
        if expected != Some(records.len() as u64) {
            bail!(
                "side file {} is truncated or padded: {} bytes of records, {} sectors × {} bytes = {} expected",
                path.display(),
                records.len(),
                h.sectors(),
                h.record(),
                expected.map_or_else(|| "more than u64".to_string(), |e| e.to_string())
            );
        }
        Ok(Some((h, records)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> SideHeader {
        SideHeader {
            crc: true,
            m: 13,
            t: 8,
            poly: 0x201b,
            sector: 512,
            ecc_bytes: 13,
            data_len: 1000,
        }
    }

    #[test]
    fn header_round_trips_and_rejects_damage() {
        let h = header();
        let mut file = h.to_bytes().to_vec();
        file.extend(vec![0u8; 2 * 17]);
        let p = Path::new("x.ecc");
        let (back, records) = SideHeader::parse(&file, p).unwrap().unwrap();
        assert_eq!(back, h);
        assert_eq!(records.len(), 34);
        // Truncated records.
        let e = SideHeader::parse(&file[..file.len() - 1], p).unwrap_err();
        assert!(e.to_string().contains("truncated"), "{e}");
        // A flipped header bit.
        let mut bad = file.clone();
        bad[17] ^= 1;
        let e = SideHeader::parse(&bad, p).unwrap_err();
        assert!(e.to_string().contains("CRC32C mismatch"), "{e}");
        // No magic: a bare parity file.
        assert!(SideHeader::parse(&[1, 2, 3], p).unwrap().is_none());
        // The header cut short.
        let e = SideHeader::parse(&file[..20], p).unwrap_err();
        assert!(e.to_string().contains("header alone"), "{e}");
    }
}
