//! Where things live in a page: data sectors in the data area; in the spare area a
//! triplicated ECC-strength header, the OOB record with its own small BCH parity, then one
//! BCH parity block per data sector.
//!
//! ```text
//! spare: | t t t v | OOB record (24 B) | record parity | parity(sector 0) | … | free |
//! ```
//!
//! The header byte `t` is stored three times and read by per-bit majority, so the decoder
//! learns the strength a page was written with even through bit errors; `v` is the layout
//! version. The record is its own codeword (BCH m = 8, t = 4) so that an OOB-only read
//! (a recovery scan) needs no data sector.

use crate::CtlError;
use ecc::Bch;
use nand::Geometry;

/// Bytes of the strength header.
pub const HEADER_BYTES: usize = 4;
/// Layout version written in the header.
pub const LAYOUT_VERSION: u8 = 1;
/// Bytes of an encoded [`OobRecord`].
pub const RECORD_BYTES: usize = 24;
/// Correction capability of the record codeword.
pub const RECORD_T: u32 = 4;
/// Field of the record codeword.
pub const RECORD_M: u32 = 8;
/// Parity bytes of the record codeword (BCH m = 8, t = 4: ⌈32/8⌉).
pub const RECORD_PARITY_BYTES: usize = 4;
/// Spare bytes a digest-mode store must keep per page: header, record and record parity.
pub const DIGEST_SPARE_BYTES: usize = HEADER_BYTES + RECORD_BYTES + RECORD_PARITY_BYTES;
/// Layout version of pages that carry a [`PprofRecord`].
pub const LAYOUT_VERSION_PPROF: u8 = 2;
/// Data bytes of the PPROF codeword.
pub const PPROF_DATA_BYTES: usize = 8;
/// Field of the PPROF codeword (FLARES §4.2: GF(2^7)).
pub const PPROF_M: u32 = 7;
/// Correction capability of the PPROF codeword (FLARES §4.2: 5).
pub const PPROF_T: u32 = 5;
/// Parity bytes of the PPROF codeword (⌈7·5/8⌉).
pub const PPROF_PARITY_BYTES: usize = 5;
/// Bytes of the PPROF codeword in the spare area.
pub const PPROF_BYTES: usize = PPROF_DATA_BYTES + PPROF_PARITY_BYTES;
/// Spare bytes a digest-mode store must keep per page when pages carry a PPROF codeword.
pub const DIGEST_SPARE_BYTES_PPROF: usize = DIGEST_SPARE_BYTES + PPROF_BYTES;

/// The critical part of FLARES's page profile, written in the spare area with every program
/// (Table II widths): the strength the page was encoded with, the strength for its next
/// program, its P/E cycles and its program time. Its own BCH codeword (GF(2^7), t = 5, 35
/// parity bits) protects it, so it decodes before the data and survives a power cut.
///
/// Encoding: one little-endian `u64`, bits 0–5 `p_cur`, 6–11 `p_next`, 12–25 `pecycles`
/// (saturating), 26–57 `writestamp` (whole seconds + 1; 0 = unknown), 58–63 zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PprofRecord {
    /// Strength of this page's data.
    pub p_cur: u8,
    /// Strength chosen for the next program of this page.
    pub p_next: u8,
    /// P/E cycles of the block when the page was programmed (14 bits).
    pub pecycles: u16,
    /// Program time in seconds + 1 (32 bits).
    pub writestamp: u32,
}

impl PprofRecord {
    /// The 8 data bytes.
    pub fn encode(&self) -> [u8; PPROF_DATA_BYTES] {
        let v = (self.p_cur as u64 & 0x3F)
            | (self.p_next as u64 & 0x3F) << 6
            | (self.pecycles.min(0x3FFF) as u64) << 12
            | (self.writestamp as u64) << 26;
        v.to_le_bytes()
    }

    /// Parses the data bytes (`None` if the reserved bits are not zero).
    pub fn decode(b: &[u8; PPROF_DATA_BYTES]) -> Option<Self> {
        let v = u64::from_le_bytes(*b);
        (v >> 58 == 0).then_some(PprofRecord {
            p_cur: (v & 0x3F) as u8,
            p_next: (v >> 6 & 0x3F) as u8,
            pecycles: (v >> 12 & 0x3FFF) as u16,
            writestamp: (v >> 26) as u32,
        })
    }
}

/// How hot a host page is expected to be (a write hint's stream).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Temperature {
    /// No hint.
    #[default]
    Unknown,
    /// Expected to be overwritten soon.
    Hot,
    /// Expected to stay.
    Cold,
}

/// The class of a host page, from the write hint that wrote it. It is kept in the page's
/// record, so it survives garbage collection, power cuts and mount.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct DataClass {
    /// A "critical" page (AP: file-system metadata the host marks; worth more reliable
    /// placement).
    pub critical: bool,
    /// Hot/cold stream.
    pub temperature: Temperature,
}

impl DataClass {
    /// No hint: an ordinary host page.
    pub const NORMAL: DataClass = DataClass {
        critical: false,
        temperature: Temperature::Unknown,
    };
    /// A critical page.
    pub const CRITICAL: DataClass = DataClass {
        critical: true,
        temperature: Temperature::Unknown,
    };

    /// Three bits: critical, then the temperature (0 unknown, 1 hot, 2 cold).
    const fn bits(self) -> u8 {
        let t = match self.temperature {
            Temperature::Unknown => 0,
            Temperature::Hot => 1,
            Temperature::Cold => 2,
        };
        (self.critical as u8) | (t << 1)
    }

    const fn from_bits(v: u8) -> Option<DataClass> {
        let temperature = match (v >> 1) & 3 {
            0 => Temperature::Unknown,
            1 => Temperature::Hot,
            2 => Temperature::Cold,
            _ => return None,
        };
        if v >> 3 != 0 {
            return None;
        }
        Some(DataClass {
            critical: v & 1 != 0,
            temperature,
        })
    }
}

/// The type of an FTL metadata page (checkpoint, padding, map page, …): 0 to
/// [`MetaTag::MAX`], so that every [`PageKind`] has its own code in the record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MetaTag(u8);

impl MetaTag {
    /// The largest tag.
    pub const MAX: u8 = 63;

    /// A tag; panics (at compile time in a `const`) above [`MetaTag::MAX`].
    pub const fn new(t: u8) -> MetaTag {
        assert!(t <= Self::MAX, "metadata tags are 0..=63");
        MetaTag(t)
    }

    /// A tag, or `None` above [`MetaTag::MAX`].
    pub const fn checked(t: u8) -> Option<MetaTag> {
        if t <= Self::MAX {
            Some(MetaTag(t))
        } else {
            None
        }
    }

    /// Its number.
    pub const fn get(self) -> u8 {
        self.0
    }
}

/// What a page holds, for the FTL and for statistics.
///
/// Record code (one byte, injective): bits 0–1 the variant (0 user, 1 GC copy, 2 metadata,
/// 3 replica); user, copy and replica pages keep their [`DataClass`] in bits 2–4 (bits 5–7
/// zero), metadata pages their [`MetaTag`] in bits 2–7. A byte that is no valid code makes the
/// record invalid (the page reads as uncorrectable).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PageKind {
    /// Host data written by the host.
    User(DataClass),
    /// Host data copied by garbage collection or wear levelling.
    GcCopy(DataClass),
    /// FTL metadata of the given type (map page, block table, checkpoint, …).
    Meta(MetaTag),
    /// A backup copy of a host page (Meta-Cure's replicas), written beside it or moved by
    /// GC. Its record's `lpn` field packs the logical page (low 32 bits) with the version
    /// it copies (high 32 bits: the low half of the sequence number of the host write that
    /// created the data; see [`OobRecord::replica`]). Never the page a logical page maps
    /// to: recovery does not take it for one.
    Replica(DataClass),
}

impl PageKind {
    /// The record byte.
    pub const fn code(self) -> u8 {
        match self {
            PageKind::User(c) => c.bits() << 2,
            PageKind::GcCopy(c) => 1 | (c.bits() << 2),
            PageKind::Meta(t) => 2 | (t.0 << 2),
            PageKind::Replica(c) => 3 | (c.bits() << 2),
        }
    }

    /// The kind a record byte names, if any (a table lookup: every read decodes one).
    #[inline]
    pub const fn from_code(v: u8) -> Option<PageKind> {
        KIND_TABLE[v as usize]
    }

    /// [`from_code`](PageKind::from_code) computed (what fills the table).
    const fn decode_code(v: u8) -> Option<PageKind> {
        match v & 3 {
            0 | 1 => match DataClass::from_bits(v >> 2) {
                Some(c) if v & 3 == 0 => Some(PageKind::User(c)),
                Some(c) => Some(PageKind::GcCopy(c)),
                None => None,
            },
            2 => Some(PageKind::Meta(MetaTag(v >> 2))),
            _ => match DataClass::from_bits(v >> 2) {
                Some(c) => Some(PageKind::Replica(c)),
                None => None,
            },
        }
    }

    /// Host data a logical page can map to (written by the host or copied): its class.
    /// `None` for metadata and for replicas.
    pub const fn data_class(self) -> Option<DataClass> {
        match self {
            PageKind::User(c) | PageKind::GcCopy(c) => Some(c),
            PageKind::Meta(_) | PageKind::Replica(_) => None,
        }
    }

    /// Whether this is metadata or a host page (or replica) marked critical (AP's
    /// "critical" pages).
    pub fn is_meta(self) -> bool {
        match self {
            PageKind::Meta(_) => true,
            PageKind::User(c) | PageKind::GcCopy(c) | PageKind::Replica(c) => c.critical,
        }
    }
}

/// Every record byte's kind.
static KIND_TABLE: [Option<PageKind>; 256] = {
    let mut t = [None; 256];
    let mut v = 0;
    while v < 256 {
        t[v] = PageKind::decode_code(v as u8);
        v += 1;
    }
    t
};

/// The per-page record in the spare area: enough to rebuild an FTL's map from the chip.
///
/// Encoding (24 bytes, little-endian): `lpn` (8), `seq` (8), `kind` (1), `t` (1), a 16-bit
/// check (low half of the CRC32C of the other 22 bytes) (2), `crc` (4). The record is its own BCH codeword; the check
/// catches a record miscorrected beyond that code's t, and `crc` (CRC32C of the data area)
/// catches miscorrected data. Because `crc` covers the data only, a GC copy can rewrite the
/// record (new sequence number, kind) and keep the data's parity and CRC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OobRecord {
    /// Logical page stored here (or an FTL-defined id for metadata pages).
    pub lpn: u64,
    /// Global sequence number of the write (newest wins on recovery).
    pub seq: u64,
    /// What the page holds.
    pub kind: PageKind,
    /// ECC strength the data sectors were encoded with.
    pub t: u8,
    /// CRC32C of the data area (filled in by the controller).
    pub crc: u32,
}

/// The compact form of the 32 spare bytes a digest-mode store keeps per page
/// ([`DIGEST_SPARE_BYTES`]: header, OOB record, record parity), in
/// [`RecordPacker::PACKED_BYTES`] (see [`nand::backend::SparePacker`]).
///
/// Of the 32 bytes, the header repeats `t` three times beside the layout version, the
/// record's check and the record's parity follow from the record, a digest-mode page's
/// data CRC is 0 (it carries no data), and a sequence number below 2⁴⁸ has two zero bytes.
/// What is left:
///
/// ```text
/// packed: | t | kind | lpn (LE) | seq (48 bits, LE) |
///           0    1     2..10      10..16
/// ```
///
/// A page whose bytes are anything else (a torn program's noise, a nonzero CRC, a newer
/// layout) has no compact form and is kept verbatim by the store: `pack` rebuilds the 32
/// bytes from the form and accepts it only if they are the bytes given, so the store
/// always reads back what was programmed.
#[derive(Debug, Clone)]
pub struct RecordPacker {
    enc: ecc::FixedEncoder<RECORD_BYTES>,
}

impl RecordPacker {
    /// Bytes of the compact form.
    pub const PACKED_BYTES: usize = 16;

    /// The packer (its parity tables built once).
    pub fn new() -> Result<Self, CtlError> {
        let enc = Bch::new(RECORD_M, RECORD_T)
            .and_then(|b| b.fixed_encoder::<RECORD_BYTES>())
            .map_err(CtlError::Ecc)?;
        Ok(RecordPacker { enc })
    }
}

impl nand::backend::SparePacker for RecordPacker {
    fn packed_len(&self) -> usize {
        Self::PACKED_BYTES
    }

    fn pack(&self, kept: &[u8], out: &mut [u8]) -> bool {
        if kept.len() != DIGEST_SPARE_BYTES || out.len() != Self::PACKED_BYTES {
            return false;
        }
        let rec = &kept[HEADER_BYTES..HEADER_BYTES + RECORD_BYTES];
        // A 0xFF `t` byte is not a strength: it keeps the form from being all 0xFF.
        if kept[0] == 0xFF || rec[14..16] != [0, 0] {
            return false;
        }
        out[0] = kept[0];
        out[1] = rec[16];
        out[2..16].copy_from_slice(&rec[0..14]);
        let mut back = [0u8; DIGEST_SPARE_BYTES];
        self.unpack(out, &mut back);
        back[..] == *kept
    }

    fn unpack(&self, packed: &[u8], kept: &mut [u8]) {
        let t = packed[0];
        kept[..HEADER_BYTES].copy_from_slice(&crate::header(t as u32));
        // lpn, seq's low 48 bits; seq's high bytes and the CRC stay zero.
        let mut r = [0u8; RECORD_BYTES];
        r[0..14].copy_from_slice(&packed[2..16]);
        r[16] = packed[1];
        r[17] = t;
        let check = OobRecord::check(&r);
        r[18..20].copy_from_slice(&check.to_le_bytes());
        let parity = self.enc.parity(&r).to_be_bytes();
        kept[HEADER_BYTES..HEADER_BYTES + RECORD_BYTES].copy_from_slice(&r);
        kept[HEADER_BYTES + RECORD_BYTES..DIGEST_SPARE_BYTES]
            .copy_from_slice(&parity[..RECORD_PARITY_BYTES]);
    }
}

/// CRC32C, slice-by-16 tables.
pub(crate) const CRC32C: crc::Crc<u32, crc::Table<16>> =
    crc::Crc::<u32, crc::Table<16>>::new(&crc::CRC_32_ISCSI);

/// CRC32C in portable software (slice-by-16 tables).
pub fn crc32c_software(data: &[u8]) -> u32 {
    CRC32C.checksum(data)
}

/// Bytes the record's 16-bit check covers (all but the check itself).
const CHECKED: usize = RECORD_BYTES - 2;

/// Byte-at-a-time table of the reflected CRC32C polynomial.
const fn crc32c_byte_table() -> [u32; 256] {
    let mut t = [0u32; 256];
    let mut v = 0;
    while v < 256 {
        let mut c = v as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                (c >> 1) ^ 0x82F6_3B78
            } else {
                c >> 1
            };
            k += 1;
        }
        t[v] = c;
        v += 1;
    }
    t
}

/// `CHECK_TABLE[i][v]`: the linear part of the CRC32C of a 22-byte message whose byte `i`
/// is `v` and every other byte zero (register from zero, no final XOR).
static CHECK_TABLE: [[u32; 256]; CHECKED] = {
    let byte = crc32c_byte_table();
    let mut t = [[0u32; 256]; CHECKED];
    let mut v = 0;
    while v < 256 {
        // Byte v in the last position: one table step from a zero register; each earlier
        // position is one more zero byte fed after it.
        let mut c = byte[v];
        let mut i = CHECKED;
        while i > 0 {
            i -= 1;
            t[i][v] = c;
            c = (c >> 8) ^ byte[(c & 0xFF) as usize];
        }
        v += 1;
    }
    t
};

/// The full CRC32C (initial all-ones register, final XOR) of 22 zero bytes.
const CHECK_ZERO: u32 = {
    let byte = crc32c_byte_table();
    let mut c = 0xFFFF_FFFFu32;
    let mut i = 0;
    while i < CHECKED {
        c = (c >> 8) ^ byte[(c & 0xFF) as usize];
        i += 1;
    }
    c ^ 0xFFFF_FFFF
};

impl OobRecord {
    /// A record for a page to be written (the controller fills in `t` and `crc`).
    pub fn new(lpn: u64, seq: u64, kind: PageKind) -> Self {
        OobRecord {
            lpn,
            seq,
            kind,
            t: 0,
            crc: 0,
        }
    }

    /// A replica's record: logical page `lpn` (below 2^32) and `version`, the sequence
    /// number of the host write whose data it copies (its low 32 bits are kept), packed
    /// into the `lpn` field.
    pub fn replica(lpn: u64, version: u64, seq: u64, class: DataClass) -> Self {
        Self::new(
            (lpn & 0xFFFF_FFFF) | (version << 32),
            seq,
            PageKind::Replica(class),
        )
    }

    /// A replica record's (logical page, low 32 bits of the version it copies).
    pub fn replica_of(&self) -> Option<(u64, u32)> {
        match self.kind {
            PageKind::Replica(_) => Some((self.lpn & 0xFFFF_FFFF, (self.lpn >> 32) as u32)),
            _ => None,
        }
    }

    /// Fixed encoding with its 16-bit check.
    pub fn encode(&self) -> [u8; RECORD_BYTES] {
        let mut r = [0u8; RECORD_BYTES];
        r[0..8].copy_from_slice(&self.lpn.to_le_bytes());
        r[8..16].copy_from_slice(&self.seq.to_le_bytes());
        r[16] = self.kind.code();
        r[17] = self.t;
        r[20..24].copy_from_slice(&self.crc.to_le_bytes());
        let check = Self::check(&r);
        r[18..20].copy_from_slice(&check.to_le_bytes());
        r
    }

    /// The low 16 bits of the CRC32C of the record's other 22 bytes.
    ///
    /// Computed from [`CHECK_TABLE`]: CRC32C is affine over GF(2), so the CRC of a fixed-length
    /// message is the CRC of all zeros XOR one table entry per (position, byte value) — 22
    /// lookups instead of a general CRC call, on every program and read.
    ///
    /// On x86_64 CPUs with SSE4.2 (detected at run time, see [`hw_crc`]) four CRC32
    /// instructions compute it instead.
    fn check(r: &[u8; RECORD_BYTES]) -> u16 {
        #[cfg(target_arch = "x86_64")]
        if hw_crc() {
            // SAFETY: `hw_crc` saw SSE4.2 in CPUID.
            return unsafe { check_sse42(r) };
        }
        Self::check_table(r)
    }

    /// [`check`](OobRecord::check) from the tables, on any CPU.
    fn check_table(r: &[u8; RECORD_BYTES]) -> u16 {
        let mut crc = CHECK_ZERO;
        for i in 0..18 {
            crc ^= CHECK_TABLE[i][r[i] as usize];
        }
        for i in 20..RECORD_BYTES {
            crc ^= CHECK_TABLE[i - 2][r[i] as usize];
        }
        crc as u16
    }

    /// Decodes [`encode`](OobRecord::encode)'s bytes; `None` if the 16-bit check fails or
    /// the kind byte is no [`PageKind`] code.
    pub fn decode(r: &[u8; RECORD_BYTES]) -> Option<Self> {
        if Self::check(r).to_le_bytes() != r[18..20] {
            return None;
        }
        let kind = PageKind::from_code(r[16])?;
        Some(OobRecord {
            lpn: u64::from_le_bytes(r[0..8].try_into().unwrap()),
            seq: u64::from_le_bytes(r[8..16].try_into().unwrap()),
            kind,
            t: r[17],
            crc: u32::from_le_bytes(r[20..24].try_into().unwrap()),
        })
    }
}

/// Whether the CPU has SSE4.2 (its CRC32 instruction computes CRC32C), asked of CPUID once:
/// no operating system is needed, so the `no_std` core can use it too.
#[cfg(target_arch = "x86_64")]
fn hw_crc() -> bool {
    use core::sync::atomic::{AtomicU8, Ordering};
    /// 0: not asked yet, 1: absent, 2: present.
    static HW: AtomicU8 = AtomicU8::new(0);
    match HW.load(Ordering::Relaxed) {
        0 => {
            // CPUID leaf 1, ECX bit 20: SSE4.2. (Leaf 1 exists on every x86_64 CPU.)
            let present = core::arch::x86_64::__cpuid(1).ecx & (1 << 20) != 0;
            HW.store(if present { 2 } else { 1 }, Ordering::Relaxed);
            present
        }
        v => v == 2,
    }
}

/// The record check with the CRC32 instruction: the 22 checked bytes as two 64-bit words,
/// one 16-bit and one 32-bit word, in order.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse4.2")]
fn check_sse42(r: &[u8; RECORD_BYTES]) -> u16 {
    use core::arch::x86_64::{_mm_crc32_u16, _mm_crc32_u32, _mm_crc32_u64};
    let w = |i: usize| u64::from_le_bytes(r[i..i + 8].try_into().expect("8 bytes"));
    let mut c = _mm_crc32_u64(0xFFFF_FFFF, w(0)) as u32;
    c = _mm_crc32_u64(c as u64, w(8)) as u32;
    c = _mm_crc32_u16(c, u16::from_le_bytes([r[16], r[17]]));
    c = _mm_crc32_u32(c, u32::from_le_bytes([r[20], r[21], r[22], r[23]]));
    (c ^ 0xFFFF_FFFF) as u16
}

/// The byte layout of a page at one ECC strength.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// Bytes per data sector (one codeword each).
    pub sector_size: usize,
    /// Sectors per page.
    pub sectors: usize,
    /// Correction capability per sector.
    pub t: u32,
    /// Parity bytes per sector.
    pub parity_bytes: usize,
    /// Parity bits per sector (≤ 8 × parity_bytes).
    pub parity_bits: usize,
    /// Offset of the record in the spare area.
    pub record_offset: usize,
    /// Offset of the record's parity in the spare area.
    pub record_parity_offset: usize,
    /// Offset of the PPROF codeword, when pages carry one.
    pub pprof_offset: Option<usize>,
    /// Offset of sector 0's parity in the spare area.
    pub parity_offset: usize,
    /// Spare bytes used in total.
    pub spare_used: usize,
}

impl Layout {
    /// The layout of `geometry`'s pages with `sector_size`-byte sectors at strength `code.t()`
    /// and a record code `record`, with a PPROF codeword after the record's parity if
    /// `pprof`; fails if the parity does not fit the spare area.
    pub fn new(
        geometry: &Geometry,
        sector_size: usize,
        code: &Bch,
        record: &Bch,
        pprof: bool,
    ) -> Result<Layout, CtlError> {
        let page = geometry.page_size as usize;
        if sector_size == 0 || !page.is_multiple_of(sector_size) {
            return Err(CtlError::SectorSize {
                sector: sector_size,
                page,
            });
        }
        let sectors = page / sector_size;
        if sectors > crate::MAX_SECTORS {
            return Err(CtlError::SectorSize {
                sector: sector_size,
                page,
            });
        }
        let record_offset = HEADER_BYTES;
        let record_parity_offset = record_offset + RECORD_BYTES;
        let pprof_offset = pprof.then_some(record_parity_offset + record.ecc_bytes());
        let parity_offset =
            record_parity_offset + record.ecc_bytes() + if pprof { PPROF_BYTES } else { 0 };
        let spare_used = parity_offset + sectors * code.ecc_bytes();
        if spare_used > geometry.spare_size as usize {
            return Err(CtlError::ParityTooLarge {
                t: code.t(),
                needed: spare_used,
                spare: geometry.spare_size as usize,
            });
        }
        Ok(Layout {
            sector_size,
            sectors,
            t: code.t(),
            parity_bytes: code.ecc_bytes(),
            parity_bits: code.ecc_bits() as usize,
            record_offset,
            record_parity_offset,
            pprof_offset,
            parity_offset,
            spare_used,
        })
    }

    /// Bits of one sector codeword (data + parity).
    pub fn codeword_bits(&self) -> u64 {
        (self.sector_size * 8 + self.parity_bits) as u64
    }
}

/// Majority vote per bit of three copies.
pub(crate) fn majority(a: u8, b: u8, c: u8) -> u8 {
    (a & b) | (a & c) | (b & c)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table-driven check is the low half of the CRC32C of the other 22 bytes, as the
    /// format says.
    /// Every kind has its own code and every code decodes back to the kind that made it
    /// (the old encoding sent `Meta(253..=255)` to one byte).
    #[test]
    fn kind_codes_are_injective() {
        let mut seen = [None; 256];
        let temps = [Temperature::Unknown, Temperature::Hot, Temperature::Cold];
        let mut kinds = alloc::vec::Vec::new();
        for critical in [false, true] {
            for temperature in temps {
                let c = DataClass {
                    critical,
                    temperature,
                };
                kinds.push(PageKind::User(c));
                kinds.push(PageKind::GcCopy(c));
                kinds.push(PageKind::Replica(c));
            }
        }
        kinds.extend((0..=MetaTag::MAX).map(|t| PageKind::Meta(MetaTag::new(t))));
        for k in kinds {
            let v = k.code() as usize;
            assert_eq!(seen[v], None, "{k:?} shares code {v} with {:?}", seen[v]);
            seen[v] = Some(k);
            assert_eq!(PageKind::from_code(v as u8), Some(k));
        }
        for (v, k) in seen.iter().enumerate() {
            if k.is_none() {
                assert_eq!(PageKind::from_code(v as u8), None, "code {v}");
            }
        }
        assert_eq!(MetaTag::checked(64), None);
        // A replica record packs its logical page and version and gives them back.
        let c = DataClass::CRITICAL;
        let r = OobRecord::replica(0x1234_5678, 0xAB_CDEF_0123, 9, c);
        assert_eq!(r.replica_of(), Some((0x1234_5678, 0xCDEF_0123)));
        assert_eq!(r.kind.data_class(), None);
        assert!(r.kind.is_meta());
        assert_eq!(OobRecord::new(5, 1, PageKind::User(c)).replica_of(), None);
    }

    #[test]
    fn crc32c_of_nothing_is_zero() {
        // The controller relies on it for digest-mode programs (no data bytes).
        assert_eq!(crc32c_software(&[]), 0);
    }

    #[test]
    fn check_is_crc32c_of_the_other_bytes() {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..2000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let rec = OobRecord {
                lpn: x,
                seq: x.rotate_left(17) ^ 0x5555,
                kind: PageKind::from_code((x >> 3) as u8 & 0x1F)
                    .unwrap_or(PageKind::User(DataClass::NORMAL)),
                t: (x >> 40) as u8,
                crc: (x >> 11) as u32,
            };
            let r = rec.encode();
            let mut other = [0u8; RECORD_BYTES - 2];
            other[..18].copy_from_slice(&r[..18]);
            other[18..].copy_from_slice(&r[20..]);
            assert_eq!(
                u16::from_le_bytes([r[18], r[19]]),
                crc32c_software(&other) as u16
            );
            // The table path (every CPU) agrees with whichever `check` took.
            assert_eq!(OobRecord::check_table(&r).to_le_bytes(), [r[18], r[19]]);
            assert_eq!(OobRecord::decode(&r), Some(rec));
            let mut bad = r;
            bad[(x % 24) as usize] ^= 1 << (x % 8);
            assert_ne!(OobRecord::decode(&bad), Some(rec));
        }
    }
}
