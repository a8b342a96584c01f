//! Binary BCH codes with programmable correction capability t, byte-compatible with Linux
//! `lib/bch.c`.
//!
//! Conventions (those of Linux): data bytes are read in order, each most significant bit
//! first, the first bit being the highest-degree coefficient of the data polynomial d(x).
//! The parity is the remainder of d(x)·x^L modulo the generator g(x) (L = deg g), stored
//! most significant bit first in ⌈L/8⌉ bytes, padded with zero bits. The code is shortened:
//! any data length up to (2^m − 1 − L)/8 bytes is accepted.
//!
//! Encoding is table driven, 64 data bits per step (eight 256-entry tables, as in CRC
//! slicing-by-8). Decoding first re-encodes and compares (no errors: done); otherwise the
//! syndromes come from the parity difference (the remainder of the received word), a binary
//! Berlekamp–Massey gives the error locator, and its roots are found by the Berlekamp trace
//! algorithm ([`crate::roots`]) — no Chien search.

use crate::bm::berlekamp_massey;
use crate::gf::{default_poly, Field};
use crate::roots::RootFinder;
use crate::syndrome::Syndromes;
use crate::widepar::WideParity;
use crate::EccError;
use alloc::vec;
use alloc::vec::Vec;

/// Register words kept on the stack; larger codes use the heap.
const STACK_WORDS: usize = 16;
/// Up to this many words the encoder uses eight tables (slicing by 8), beyond one.
const SLICE8_MAX_WORDS: usize = 16;

/// A BCH code over GF(2^m) correcting `t` bit errors.
#[derive(Debug, Clone)]
pub struct Bch {
    gf: Field,
    t: u32,
    ecc_bits: u32,
    ecc_bytes: usize,
    words: usize,
    /// Encoder tables: `tables[k][v]` (W words each) = v(x)·x^(8(7−k))·x^L mod g.
    tables: Vec<u64>,
    slice8: bool,
    /// Tables in `tables`: 16 (slicing by 16, registers of ≤ 2 words), 8, or 1.
    ntab: usize,
    /// The odd syndromes' CRC tables.
    syn: Syndromes,
    roots: RootFinder,
    /// Carry-less-multiply encoder (parity ≤ 128 bits, CPU with PCLMULQDQ).
    #[cfg(all(feature = "std", target_arch = "x86_64"))]
    clmul: Option<crate::clmul::Clmul>,
    /// Carry-less-multiply encoder for wider parity (on the CPU's PCLMULQDQ, or on its
    /// scalar model after [`Bch::lane_models`]).
    wide: Option<WideParity>,
}

/// Scratch register: on the stack for the usual sizes.
#[allow(clippy::large_enum_variant)] // the stack variant is the point: no allocation per call
enum Reg {
    Stack([u64; STACK_WORDS], usize),
    Heap(Vec<u64>),
}

impl Reg {
    fn new(words: usize) -> Reg {
        if words <= STACK_WORDS {
            Reg::Stack([0; STACK_WORDS], words)
        } else {
            Reg::Heap(vec![0; words])
        }
    }
    fn get(&mut self) -> &mut [u64] {
        match self {
            Reg::Stack(a, n) => &mut a[..*n],
            Reg::Heap(v) => v,
        }
    }
}

impl Bch {
    /// The code with the default primitive polynomial of GF(2^m).
    pub fn new(m: u32, t: u32) -> Result<Bch, EccError> {
        let poly = default_poly(m).ok_or(EccError::FieldDegree { m })?;
        Bch::with_poly(m, t, poly)
    }

    /// The smallest-field code that protects `sector_bytes` of data with strength `t`
    /// (e.g. m = 13 for 512 B, 16 for 4 KiB at moderate t).
    pub fn for_sector(sector_bytes: usize, t: u32) -> Result<Bch, EccError> {
        if t == 0 {
            return Err(EccError::ZeroT);
        }
        let mut last = Err(EccError::FieldDegree { m: 0 });
        for m in crate::gf::MIN_M..=crate::gf::MAX_M {
            let n = (1u64 << m) - 1;
            if (sector_bytes as u64) * 8 + (m as u64) * (t as u64) > n {
                continue;
            }
            match Bch::new(m, t) {
                Ok(b) if b.max_data_bytes() >= sector_bytes => return Ok(b),
                Ok(b) => {
                    last = Err(EccError::DataTooLong {
                        len: sector_bytes,
                        max: b.max_data_bytes(),
                    })
                }
                Err(e) => last = Err(e),
            }
        }
        match last {
            Err(EccError::FieldDegree { .. }) => Err(EccError::SectorTooLarge {
                len: sector_bytes,
                t,
            }),
            other => other,
        }
    }

    /// The code over GF(2^m) built on primitive polynomial `poly`.
    pub fn with_poly(m: u32, t: u32, poly: u32) -> Result<Bch, EccError> {
        if t == 0 {
            return Err(EccError::ZeroT);
        }
        let gf = Field::new(m, poly)?;
        let n = gf.n();
        // The generator's roots: α^(2i+1) and their conjugates, i < t.
        // As Linux: m·t < 2^m − 1.
        let max_t = (n - 1) / m;
        if t > max_t {
            return Err(EccError::TooLargeT { t, m, max: max_t });
        }
        let mut is_root = vec![false; n as usize];
        for i in 0..t {
            let mut r = (2 * i + 1) % n;
            for _ in 0..m {
                is_root[r as usize] = true;
                r = ((r as u64 * 2) % n as u64) as u32;
            }
        }
        // g(x) = Π (x − α^r), coefficients lowest first; they end up in GF(2).
        let mut g: Vec<u32> = vec![1];
        for (r, _) in is_root.iter().enumerate().filter(|(_, &b)| b) {
            let a = gf.pow(r as u64);
            let mut next = vec![0u32; g.len() + 1];
            for (i, &c) in g.iter().enumerate() {
                next[i + 1] ^= c;
                next[i] ^= gf.mul(c, a);
            }
            g = next;
        }
        debug_assert!(g.iter().all(|&c| c <= 1));
        let ecc_bits = (g.len() - 1) as u32;
        if ecc_bits + 8 > n {
            return Err(EccError::TooLargeT {
                t,
                m,
                max: max_t.saturating_sub(1),
            });
        }
        // Linux sizes the parity buffer for m·t bits even when deg g < m·t; the register
        // spans that many bits so the extra parity bytes read as zero.
        let words = ((m * t) as usize).div_ceil(64);
        // g without its leading term, left-aligned: x^(L−1−k) at global bit k.
        let mut gen = vec![0u64; words];
        for k in 0..ecc_bits as usize {
            if g[ecc_bits as usize - 1 - k] != 0 {
                gen[k / 64] |= 1 << (63 - k % 64);
            }
        }
        let slice8 = words <= SLICE8_MAX_WORDS;
        let ntab = if words <= 2 {
            16
        } else if slice8 {
            8
        } else {
            1
        };
        let mut tables = vec![0u64; ntab * 256 * words];
        // The byte table (k = 7): feed the 8 bits of v into a zero register.
        let last = ntab - 1;
        for v in 0..256usize {
            let row = &mut tables[(last * 256 + v) * words..(last * 256 + v + 1) * words];
            for bit in (0..8).rev() {
                let fb = (row[0] >> 63) ^ ((v as u64 >> bit) & 1);
                shl1(row);
                if fb != 0 {
                    for (r, &gw) in row.iter_mut().zip(&gen) {
                        *r ^= gw;
                    }
                }
            }
        }
        // T_k[v] = T_(k+1)[v] advanced by 8 zero bits.
        for k in (0..last).rev() {
            for v in 0..256usize {
                let (lo, hi) = tables.split_at_mut((k + 1) * 256 * words);
                let src = &hi[v * words..(v + 1) * words];
                let dst = &mut lo[(k * 256 + v) * words..(k * 256 + v + 1) * words];
                dst.copy_from_slice(src);
                let top = (dst[0] >> 56) as usize;
                shl8(dst);
                let byte_row = &hi[((last - k - 1) * 256 + top) * words..][..words];
                for (d, &b) in dst.iter_mut().zip(byte_row) {
                    *d ^= b;
                }
            }
        }
        let ecc_bytes = ((m * t) as usize).div_ceil(8);
        let syn = Syndromes::new(&gf, t, ecc_bytes as u32 * 8 - ecc_bits);
        let roots = RootFinder::new(&gf);
        #[cfg(all(feature = "std", target_arch = "x86_64"))]
        let clmul = (words <= 2)
            .then(|| crate::clmul::Clmul::new([gen[0], gen.get(1).copied().unwrap_or(0)]))
            .flatten();
        let wide = (words > 2)
            .then(|| WideParity::new(&gen))
            .flatten()
            .and_then(WideParity::on_hardware);
        Ok(Bch {
            #[cfg(all(feature = "std", target_arch = "x86_64"))]
            clmul,
            wide,
            gf,
            t,
            ecc_bits,
            ecc_bytes,
            words,
            tables,
            slice8,
            ntab,
            syn,
            roots,
        })
    }

    /// The same code without CPU-specific acceleration (the portable table encoder), for
    /// cross-checking the two.
    #[cfg_attr(not(all(feature = "std", target_arch = "x86_64")), allow(unused_mut))]
    pub fn portable(mut self) -> Bch {
        #[cfg(all(feature = "std", target_arch = "x86_64"))]
        {
            self.clmul = None;
        }
        self.wide = None;
        self
    }

    /// The same code with its carry-less-multiply encoders running on the scalar models of
    /// their lanes, whatever the CPU has: the same algorithms with a bit-by-bit product in
    /// place of PCLMULQDQ / VPCLMULQDQ, so that their logic — the AVX-512 paths included
    /// (runs of weighted blocks, four sectors side by side) — is checked on machines without
    /// the instructions. Parity over 128 bits takes the wide-parity encoder; up to 128 bits
    /// (x86-64 builds with `std`), the 128-bit and four-lane encoder. Slow; for tests.
    pub fn lane_models(mut self) -> Bch {
        // Row 1 of the byte table is the register after feeding the single bit 1 into a
        // zero register: g's low part, left-aligned, exactly.
        let w = self.words;
        let byte_table = (self.ntab - 1) * 256 * w;
        let gen = self.tables[byte_table + w..byte_table + 2 * w].to_vec();
        if w > 2 {
            self.wide = WideParity::new(&gen);
        } else {
            #[cfg(all(feature = "std", target_arch = "x86_64"))]
            {
                self.clmul = Some(crate::clmul::Clmul::model([
                    gen[0],
                    gen.get(1).copied().unwrap_or(0),
                ]));
            }
        }
        self
    }

    /// The same code without the four-lane (AVX-512) path of the carry-less-multiply
    /// encoder: the 128-bit path (on PCLMULQDQ or its model) or the tables, for
    /// cross-checking them.
    #[cfg_attr(not(all(feature = "std", target_arch = "x86_64")), allow(unused_mut))]
    pub fn without_avx512(mut self) -> Bch {
        #[cfg(all(feature = "std", target_arch = "x86_64"))]
        {
            self.clmul = self.clmul.map(crate::clmul::Clmul::narrow);
        }
        self
    }

    /// Field degree m.
    pub fn m(&self) -> u32 {
        self.gf.m()
    }
    /// Correction capability t (bits per codeword).
    pub fn t(&self) -> u32 {
        self.t
    }
    /// Primitive polynomial of the field.
    pub fn prim_poly(&self) -> u32 {
        self.gf.poly()
    }
    /// Maximum codeword length in bits, 2^m − 1.
    pub fn n(&self) -> u32 {
        self.gf.n()
    }
    /// Parity bits (the generator's degree, ≤ m·t).
    pub fn ecc_bits(&self) -> u32 {
        self.ecc_bits
    }
    /// Parity bytes, ⌈m·t / 8⌉ as in Linux (bits past [`ecc_bits`](Bch::ecc_bits) are zero).
    pub fn ecc_bytes(&self) -> usize {
        self.ecc_bytes
    }
    /// Longest data block the code protects, in bytes.
    pub fn max_data_bytes(&self) -> usize {
        ((self.gf.n() - self.ecc_bits) / 8) as usize
    }
    /// The field.
    pub fn field(&self) -> &Field {
        &self.gf
    }

    fn check(&self, data: usize, ecc: usize) -> Result<(), EccError> {
        if data > self.max_data_bytes() {
            return Err(EccError::DataTooLong {
                len: data,
                max: self.max_data_bytes(),
            });
        }
        if ecc != self.ecc_bytes() {
            return Err(EccError::EccLength {
                got: ecc,
                expected: self.ecc_bytes(),
            });
        }
        Ok(())
    }

    /// The parity of `data`, written to `ecc` (exactly [`ecc_bytes`](Bch::ecc_bytes) long).
    pub fn encode(&self, data: &[u8], ecc: &mut [u8]) -> Result<(), EccError> {
        self.check(data.len(), ecc.len())?;
        let mut reg = Reg::new(self.words);
        let r = reg.get();
        self.remainder(data, r);
        store(r, ecc);
        Ok(())
    }

    /// Encodes `data` as consecutive codewords of `sector` bytes each, writing each one's
    /// parity ([`ecc_bytes`](Bch::ecc_bytes)) to consecutive slots of `ecc`: the same bytes
    /// as [`encode`](Bch::encode) per sector. Where the CPU has the AVX-512 path and a
    /// sector is whole 64-byte rounds, four sectors are encoded side by side (a page's
    /// sectors share their reductions).
    pub fn encode_sectors(
        &self,
        data: &[u8],
        sector: usize,
        ecc: &mut [u8],
    ) -> Result<(), EccError> {
        let n = self.ecc_bytes();
        if sector == 0 || !data.len().is_multiple_of(sector) {
            return Err(EccError::SectorSplit {
                len: data.len(),
                sector,
            });
        }
        self.check(sector, n)?;
        let count = data.len() / sector;
        if ecc.len() != count * n {
            return Err(EccError::EccLength {
                got: ecc.len(),
                expected: count * n,
            });
        }
        #[allow(unused_mut)]
        let mut done = 0;
        #[cfg(all(feature = "std", target_arch = "x86_64"))]
        if let Some(c) = self.clmul.as_ref().filter(|c| c.has_x4(sector)) {
            for (four, out) in data
                .chunks_exact(4 * sector)
                .zip(ecc.chunks_exact_mut(4 * n))
            {
                let s: [&[u8]; 4] = core::array::from_fn(|i| &four[i * sector..(i + 1) * sector]);
                for (r, o) in c.remainder_x4(s).iter().zip(out.chunks_exact_mut(n)) {
                    o.copy_from_slice(&r.to_be_bytes()[..n]);
                }
                done += 4;
            }
        }
        for (d, o) in data
            .chunks_exact(sector)
            .zip(ecc.chunks_exact_mut(n))
            .skip(done)
        {
            self.encode(d, o)?;
        }
        Ok(())
    }

    /// A table-driven encoder for messages of exactly `N` bytes, for short fixed-size
    /// codewords (an OOB record) encoded on every page program. The code is linear, so the
    /// parity of a message is the XOR of the parities of its bytes in place: one table row
    /// per (position, byte value), built from 8 basis encodes per position. Needs parity of
    /// at most 64 bits; `N` must fit the code.
    pub fn fixed_encoder<const N: usize>(&self) -> Result<FixedEncoder<N>, EccError> {
        self.check(N, self.ecc_bytes)?;
        if self.ecc_bits > 64 {
            return Err(EccError::ParityTooWide {
                bits: self.ecc_bits,
            });
        }
        let mut table = alloc::vec![[0u64; 256]; N];
        let mut msg = [0u8; N];
        let mut ecc = [0u8; 8];
        for (i, row) in table.iter_mut().enumerate() {
            let mut basis = [0u64; 8];
            for (b, out) in basis.iter_mut().enumerate() {
                msg[i] = 0x80 >> b;
                self.encode(&msg, &mut ecc[..self.ecc_bytes])?;
                *out = u64::from_be_bytes(ecc);
            }
            msg[i] = 0;
            for v in 1..256usize {
                // Row v = row (v without its lowest set bit) XOR that bit's basis parity.
                let low = v & v.wrapping_neg();
                row[v] = row[v ^ low] ^ basis[7 - low.trailing_zeros() as usize];
            }
        }
        // Limb i's weight x^(64(n−i)) mod g' is the parity of the message whose only set bit
        // is the lowest of byte 8i + 7.
        #[cfg(all(feature = "std", target_arch = "x86_64"))]
        let clmul = (N.is_multiple_of(8) && self.clmul.is_some())
            .then(|| {
                crate::clmul::FixedClmul::new((0..N / 8).map(|i| table[8 * i + 7][1]).collect())
            })
            .flatten();
        Ok(FixedEncoder {
            ecc_bytes: self.ecc_bytes,
            table: table.into_boxed_slice().try_into().expect("N rows"),
            #[cfg(all(feature = "std", target_arch = "x86_64"))]
            clmul,
        })
    }

    /// The parity of `data` as a new vector.
    pub fn encode_vec(&self, data: &[u8]) -> Result<Vec<u8>, EccError> {
        let mut ecc = vec![0u8; self.ecc_bytes()];
        self.encode(data, &mut ecc)?;
        Ok(ecc)
    }

    fn remainder(&self, data: &[u8], r: &mut [u64]) {
        if let Some(w) = &self.wide {
            // (`r` is zero here: every caller starts from a fresh register.)
            let rest = w.remainder(data, r);
            self.remainder_bytes(rest, r);
            return;
        }
        #[cfg(all(feature = "std", target_arch = "x86_64"))]
        if let Some(c) = &self.clmul {
            let rest = c.remainder(data, r);
            self.remainder_bytes(rest, r);
            return;
        }
        // Fixed register widths get a fully unrolled loop.
        let rest = match self.words {
            1 => slice16::<1>(&self.tables, data, r),
            2 => slice16::<2>(&self.tables, data, r),
            3 if self.slice8 => slice8::<3>(&self.tables, data, r),
            4 if self.slice8 => slice8::<4>(&self.tables, data, r),
            5 if self.slice8 => slice8::<5>(&self.tables, data, r),
            6 if self.slice8 => slice8::<6>(&self.tables, data, r),
            7 if self.slice8 => slice8::<7>(&self.tables, data, r),
            8 if self.slice8 => slice8::<8>(&self.tables, data, r),
            9 if self.slice8 => slice8::<9>(&self.tables, data, r),
            10 if self.slice8 => slice8::<10>(&self.tables, data, r),
            11 if self.slice8 => slice8::<11>(&self.tables, data, r),
            12 if self.slice8 => slice8::<12>(&self.tables, data, r),
            13 if self.slice8 => slice8::<13>(&self.tables, data, r),
            14 if self.slice8 => slice8::<14>(&self.tables, data, r),
            15 if self.slice8 => slice8::<15>(&self.tables, data, r),
            16 if self.slice8 => slice8::<16>(&self.tables, data, r),
            _ => data,
        };
        self.remainder_bytes(rest, r);
    }

    /// Byte-at-a-time remainder (tails, and registers too wide for slicing).
    fn remainder_bytes(&self, data: &[u8], r: &mut [u64]) {
        let w = self.words;
        let byte_table = (self.ntab - 1) * 256 * w;
        for &b in data {
            let top = ((r[0] >> 56) as u8 ^ b) as usize;
            shl8(r);
            let row = &self.tables[byte_table + top * w..][..w];
            for (x, &y) in r.iter_mut().zip(row) {
                *x ^= y;
            }
        }
    }

    /// Corrects `data` and `ecc` in place; returns the number of bit errors corrected, or
    /// [`EccError::Uncorrectable`] when more than t errors are detected (the buffers are then
    /// left unchanged). More than t errors may also decode to another codeword
    /// (miscorrection): callers that must know check a CRC.
    pub fn decode(&self, data: &mut [u8], ecc: &mut [u8]) -> Result<u32, EccError> {
        self.check(data.len(), ecc.len())?;
        let mut reg = Reg::new(self.words);
        let r = reg.get();
        self.remainder(data, r);
        // Difference with the received parity = remainder of the received word.
        let mut any = 0u64;
        let mut diff = vec![0u8; ecc.len()];
        {
            let mut calc = vec![0u8; ecc.len()];
            store(r, &mut calc);
            for ((d, &c), &e) in diff.iter_mut().zip(&calc).zip(ecc.iter()) {
                *d = c ^ e;
            }
            // Bits past the parity proper are not part of the code.
            let l = self.ecc_bits as usize;
            for (i, d) in diff.iter_mut().enumerate() {
                if 8 * i + 8 > l {
                    let keep = l.saturating_sub(8 * i);
                    *d &= if keep == 0 { 0 } else { 0xFFu8 << (8 - keep) };
                }
            }
            for &d in &diff {
                any |= d as u64;
            }
        }
        if any == 0 {
            return Ok(0);
        }
        let positions = self.locate(&diff, data.len())?;
        let data_bits = data.len() * 8;
        let l = self.ecc_bits as usize;
        for &p in &positions {
            let p = p as usize;
            if p >= l {
                let q = data_bits - 1 - (p - l);
                data[q / 8] ^= 0x80 >> (q % 8);
            } else {
                let q = l - 1 - p;
                ecc[q / 8] ^= 0x80 >> (q % 8);
            }
        }
        Ok(positions.len() as u32)
    }

    /// The syndromes S_1..S_2t (`syn[j]`, 1-based) of the received word whose remainder
    /// modulo g is `diff` (the parity difference).
    fn syndromes(&self, diff: &[u8]) -> Vec<u32> {
        let mut syn = vec![0u32; 2 * self.t as usize + 1];
        self.syn.compute(&self.gf, diff, &mut syn);
        syn
    }

    /// Error positions (polynomial degrees in the codeword) from the parity difference.
    fn locate(&self, diff: &[u8], data_len: usize) -> Result<Vec<u32>, EccError> {
        let gf = &self.gf;
        let syn = self.syndromes(diff);
        let (sigma, l) = berlekamp_massey(gf, self.t as usize, &syn)?;
        // Roots of the reversed (monic) locator are the error locators X = α^p.
        // Roots of the reversed locator x^L·σ(1/x) are the error locators X = α^p; it is
        // monic since σ_0 = 1.
        let rev: Vec<u32> = (0..=l).map(|k| sigma[l - k]).collect();
        let mut found = Vec::with_capacity(l);
        if !self.roots.roots(gf, &rev, &mut found) || found.len() != l {
            return Err(EccError::Uncorrectable);
        }
        let codeword_bits = (data_len * 8) as u32 + self.ecc_bits;
        let mut positions: Vec<u32> = found.iter().map(|&x| gf.log(x)).collect();
        if positions.iter().any(|&p| p >= codeword_bits) {
            return Err(EccError::Uncorrectable);
        }
        positions.sort_unstable();
        Ok(positions)
    }
}

/// Slicing-by-16 over whole 16-byte chunks for registers of one or two words: the whole
/// register is replaced each step, so the 16 lookups are independent; returns the tail.
fn slice16<'a, const W: usize>(tables: &[u64], data: &'a [u8], reg: &mut [u64]) -> &'a [u8] {
    let (rows, _) = tables.as_chunks::<W>();
    let t: [&[[u64; W]; 256]; 16] =
        core::array::from_fn(|k| rows[k * 256..(k + 1) * 256].try_into().unwrap());
    let mut r = [0u64; W];
    r.copy_from_slice(&reg[..W]);
    let mut chunks = data.chunks_exact(16);
    for chunk in &mut chunks {
        let hi = u64::from_be_bytes(chunk[..8].try_into().unwrap()) ^ r[0];
        let lo =
            u64::from_be_bytes(chunk[8..].try_into().unwrap()) ^ if W == 2 { r[W - 1] } else { 0 };
        let mut next = [0u64; W];
        for k in 0..8 {
            let a = &t[k][((hi >> (56 - 8 * k)) & 0xFF) as usize];
            let b = &t[8 + k][((lo >> (56 - 8 * k)) & 0xFF) as usize];
            for i in 0..W {
                next[i] ^= a[i] ^ b[i];
            }
        }
        r = next;
    }
    // One more 8-byte step with the second half of the tables (they are the slicing-by-8
    // tables: T16[8 + k] = T8[k]).
    let mut rest = chunks.remainder();
    if rest.len() >= 8 {
        let v = r[0] ^ u64::from_be_bytes(rest[..8].try_into().unwrap());
        let mut next = [0u64; W];
        next[..W - 1].copy_from_slice(&r[1..]);
        for k in 0..8 {
            let row = &t[8 + k][((v >> (56 - 8 * k)) & 0xFF) as usize];
            for i in 0..W {
                next[i] ^= row[i];
            }
        }
        r = next;
        rest = &rest[8..];
    }
    reg[..W].copy_from_slice(&r);
    rest
}

/// Encoder for one fixed message length `N` (see [`Bch::fixed_encoder`]).
#[derive(Debug, Clone)]
pub struct FixedEncoder<const N: usize> {
    ecc_bytes: usize,
    /// `table[i][v]`: parity of the message with byte `i` = `v` and all others zero,
    /// left-aligned big-endian in a u64.
    table: alloc::boxed::Box<[[u64; 256]; N]>,
    /// The carry-less-multiply path (whole 64-bit limbs, a CPU with PCLMULQDQ).
    #[cfg(all(feature = "std", target_arch = "x86_64"))]
    clmul: Option<crate::clmul::FixedClmul>,
}

impl<const N: usize> FixedEncoder<N> {
    /// The parity of `data`, left-aligned big-endian in a u64 (its first
    /// [`Bch::ecc_bytes`] bytes are what [`Bch::encode`] writes).
    pub fn parity(&self, data: &[u8; N]) -> u64 {
        #[cfg(all(feature = "std", target_arch = "x86_64"))]
        if let Some(c) = &self.clmul {
            return c.parity(data);
        }
        self.parity_table(data)
    }

    /// The same encoder on its tables only (for cross-checking the two paths).
    pub fn portable(self) -> Self {
        FixedEncoder {
            #[cfg(all(feature = "std", target_arch = "x86_64"))]
            clmul: None,
            ..self
        }
    }

    fn parity_table(&self, data: &[u8; N]) -> u64 {
        let mut acc = 0u64;
        // Indexing by a constant range unrolls without bounds checks.
        #[allow(clippy::needless_range_loop)]
        for i in 0..N {
            acc ^= self.table[i][data[i] as usize];
        }
        acc
    }

    /// The parity of `data`, written to `ecc`; the same bytes as [`Bch::encode`].
    pub fn encode(&self, data: &[u8; N], ecc: &mut [u8]) -> Result<(), EccError> {
        if ecc.len() != self.ecc_bytes {
            return Err(EccError::EccLength {
                got: ecc.len(),
                expected: self.ecc_bytes,
            });
        }
        ecc.copy_from_slice(&self.parity(data).to_be_bytes()[..self.ecc_bytes]);
        Ok(())
    }
}

/// Slicing-by-8 over whole 8-byte chunks with a `W`-word register; returns the tail.
fn slice8<'a, const W: usize>(tables: &[u64], data: &'a [u8], reg: &mut [u64]) -> &'a [u8] {
    let (rows, _) = tables.as_chunks::<W>();
    // Eight 256-row tables as fixed-size arrays: a byte index needs no bounds check.
    let t: [&[[u64; W]; 256]; 8] =
        core::array::from_fn(|k| rows[k * 256..(k + 1) * 256].try_into().unwrap());
    let mut r = [0u64; W];
    r.copy_from_slice(&reg[..W]);
    let mut chunks = data.chunks_exact(8);
    for chunk in &mut chunks {
        let v = r[0] ^ u64::from_be_bytes(chunk.try_into().unwrap());
        let mut next = [0u64; W];
        next[..W - 1].copy_from_slice(&r[1..]);
        for (k, table) in t.iter().enumerate() {
            let row = &table[((v >> (56 - 8 * k)) & 0xFF) as usize];
            for i in 0..W {
                next[i] ^= row[i];
            }
        }
        r = next;
    }
    reg[..W].copy_from_slice(&r);
    chunks.remainder()
}

fn shl1(r: &mut [u64]) {
    let n = r.len();
    for i in 0..n {
        let next = if i + 1 < n { r[i + 1] >> 63 } else { 0 };
        r[i] = (r[i] << 1) | next;
    }
}

fn shl8(r: &mut [u64]) {
    let n = r.len();
    for i in 0..n {
        let next = if i + 1 < n { r[i + 1] >> 56 } else { 0 };
        r[i] = (r[i] << 8) | next;
    }
}

/// The first `out.len()` bytes of the left-aligned register, big-endian.
fn store(r: &[u64], out: &mut [u8]) {
    if out.len() <= 16 && r.len() <= 2 {
        // Parity of up to 128 bits: the register's bytes in one piece.
        let v = (r[0] as u128) << 64 | r.get(1).copied().unwrap_or(0) as u128;
        out.copy_from_slice(&v.to_be_bytes()[..out.len()]);
        return;
    }
    for (i, o) in out.iter_mut().enumerate() {
        *o = (r[i / 8] >> (56 - 8 * (i % 8))) as u8;
    }
}
